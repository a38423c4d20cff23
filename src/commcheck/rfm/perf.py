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


def data_records(check) -> list[dict]:
    return _stdout_records(check)['DATA']


def meta(check) -> dict:
    found = _stdout_records(check)['META']
    return found[0] if found else {}
