"""Sanity and performance from the kernels' records (see ``commcheck.records``)."""

from __future__ import annotations

import os

import reframe.utility.sanity as sn

from commcheck import records


def _stdout_records(check) -> dict[str, list[dict]]:
    return records.parse_file(os.path.join(check.stagedir, str(check.stdout)))


@sn.deferrable
def kernel_passed(check, expected_data: int | None = None) -> bool:
    """The kernel validated everything it received (PASS) and printed every point it promised."""
    out = _stdout_records(check)
    sn.assert_true(out['META'], msg='no META record: the kernel did not start properly').evaluate()
    sn.assert_true(out['PASS'], msg='no PASS record: the kernel did not validate its data '
                                    '(see the stderr ERROR line)').evaluate()
    if expected_data is not None:
        sn.assert_eq(len(out['DATA']), expected_data,
                     msg='kernel printed {0} DATA records, expected {1}').evaluate()
    return True


def perf_record(check, rectype: str, field: str, unit: str, **where):
    """A performance function reading one field of the record matching ``where``."""
    @sn.deferrable
    def value():
        return float(records.select(_stdout_records(check)[rectype], **where)[field])

    return sn.make_performance_function(value(), unit)


def size_label(size: int) -> str:
    return f'{size}B'


def sweep_variables(check, field: str, name: str, unit: str) -> dict:
    """``<name>_<size>B`` for every DATA record: each measured size reaches the perflog."""
    sizes = [int(r['size']) for r in _stdout_records(check)['DATA']]
    return {f'{name}_{size_label(s)}': perf_record(check, 'DATA', field, unit, size=s)
            for s in sizes}


def kernel_run(check, kernel: str) -> dict[str, list[dict]]:
    """The records of one kernel's run in a job that ran several (``META kernel=<kernel>``)."""
    text = open(os.path.join(check.stagedir, str(check.stdout)), errors='replace').read()
    for run in records.split_runs(text):
        if run['META'] and run['META'][0].get('kernel') == kernel:
            return run
    raise records.RecordError(f'no output of kernel {kernel!r} in {check.stdout}')


def data_records(check) -> list[dict]:
    return _stdout_records(check)['DATA']


def computed_variables(values: dict[str, tuple[float, str]]) -> dict:
    """Perf variables for values computed in Python (fits, ratios): name -> (value, unit)."""
    return {name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in values.items()}
