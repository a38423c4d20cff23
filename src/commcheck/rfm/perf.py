"""Sanity and performance from the kernels' records (see ``commcheck.analysis.kernel_records``)."""

from __future__ import annotations

import math
import os

import reframe.utility.sanity as sn

from commcheck import experiments
from commcheck.analysis import kernel_records


def job_output(check) -> str:
    """The text of the test's job stdout (undecodable bytes replaced): every reader of a job's
    output reads it here."""
    with open(os.path.join(check.stagedir, str(check.stdout)), errors='replace') as fp:
        return fp.read()


#: Parsed job outputs, newest last: a check's sanity and perf functions parse its output once.
_PARSED: dict[tuple, dict[str, list[dict]]] = {}


def _stdout_records(check) -> dict[str, list[dict]]:
    """The records of the job's stdout (shared: callers do not change them), parsed once per
    file and version of it (a retry writes another)."""
    path = os.path.join(check.stagedir, str(check.stdout))
    info = os.stat(path)
    key = (path, info.st_mtime_ns, info.st_size)
    if key not in _PARSED:
        if len(_PARSED) >= 16:
            del _PARSED[next(iter(_PARSED))]
        _PARSED[key] = kernel_records.parse(job_output(check))
    return _PARSED[key]


@sn.deferrable
def kernel_passed(check, sizes: str | None = None) -> bool:
    """The kernel validated everything it received (PASS) and printed a DATA record for every
    size it was asked for (``sizes``: the ``--sizes`` text it was given). A kernel that did not
    start is failed with the last lines of its job's stderr (the launcher's or MPI's reason)."""
    out = _stdout_records(check)
    faults = list(getattr(check, 'faults', ()))
    if not out['META']:
        faults.append(f'its stderr ends: {stderr_tail(check)}')
    return run_passed(out, sizes, faults=faults)


def stderr_tail(check, lines: int = 3, chars: int = 400) -> str:
    """The last ``lines`` non-blank lines of the job's stderr, on one line, at most ``chars``."""
    try:
        with open(os.path.join(check.stagedir, str(check.stderr)), errors='replace') as f:
            kept = [line.strip() for line in f if line.strip()][-lines:]
    except OSError as err:
        return f'(unreadable: {err.strerror})'
    text = ' | '.join(kept) or '(empty)'
    return text if len(text) <= chars else '...' + text[-chars:]


def run_passed(out: dict, sizes: str | None = None, what: str = 'the kernel',
               faults=()) -> bool:
    why = ''.join(f'; {f}' for f in faults)
    sn.assert_true(out['META'],
                   msg=f'no META record: {what} did not start properly{why}').evaluate()
    sn.assert_true(out['PASS'], msg=f'no PASS record: {what} did not validate its data '
                                    '(see the stderr ERROR line)').evaluate()
    if sizes is not None:
        promised = kernel_records.parse_sizes(sizes)
        printed = [r.get('size') for r in out['DATA']]
        sn.assert_eq(printed, promised,
                     msg=f'{what} printed sizes {{0}}, but was asked for {{1}}').evaluate()
    return True


def perf_record(check, rectype: str, field: str, unit: str, **where):
    """A performance function reading one field of the record matching ``where``."""
    @sn.deferrable
    def value():
        return float(kernel_records.select(_stdout_records(check)[rectype], **where)[field])

    return sn.make_performance_function(value(), unit)


def sweep_variables(check, field: str, name: str, unit: str) -> dict:
    """``<name>_<size>B`` for every DATA record: each measured size reaches the perflog."""
    sizes = [int(r['size']) for r in _stdout_records(check)['DATA']]
    return {experiments.sized_name(name, s): perf_record(check, 'DATA', field, unit, size=s)
            for s in sizes}


def kernel_runs(check, kernel: str) -> list[dict[str, list[dict]]]:
    """The records of each run of one kernel in a job that ran several (``META
    kernel=<kernel>``), in order; at least one."""
    runs = [run for run in kernel_records.split_runs(job_output(check))
            if run['META'] and run['META'][0].get('kernel') == kernel]
    if not runs:
        raise kernel_records.RecordError(f'no output of kernel {kernel!r} in {check.stdout}')
    return runs


def kernel_run(check, kernel: str) -> dict[str, list[dict]]:
    """The records of one kernel's (first) run in a job that ran several."""
    return kernel_runs(check, kernel)[0]


def data_records(check) -> list[dict]:
    return _stdout_records(check)['DATA']


def computed_variables(check, values: dict[str, tuple[float, str]]) -> dict:
    """Perf variables for values computed in Python (fits, ratios): name -> (value, unit).

    A value that is not finite is never reported: it is left out and the check records a
    finding saying which, so the test fails with that reason once its other data are kept."""
    bad = sorted(name for name, (value, _) in values.items() if not math.isfinite(value))
    if bad:
        check.faults = check.faults + [f'not computable (not finite): {", ".join(bad)}']
    return {name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in values.items() if name not in bad}


def first_message(check) -> dict:
    """``first_message``: the first message's one-way time, where a kernel reports it apart
    (the managed languages: the seeds saw Java pay for JIT compilation there)."""
    result = _stdout_records(check)['RESULT']
    if not result or 'first_message_us' not in result[0]:
        return {}
    return {'first_message': perf_record(check, 'RESULT', 'first_message_us', 'us')}


def floor_variables(check) -> dict:
    """``floor_latency_<n>B`` (us) and ``floor_bw_<n>B`` (MB/s), as experiments.FLOOR_VARIABLES
    declares them, for every FLOOR record of the launch: the hardware floor the kernel measured
    beside its MPI figures; and ``cpu_wait`` (:data:`experiments.CPU_WAIT`), the largest of
    the records' shares of time the ranks waited for a CPU. A launch without one (``FLOOR
    kind=none``, a managed language) gets a note saying why, and no floor variable."""
    if check.lang not in experiments.FLOOR_LANGUAGES:
        return no_floor(check, 'managed language')
    rows = _stdout_records(check)['FLOOR']
    measured = [r for r in rows if r.get('kind') != 'none']
    if not measured:
        return no_floor(check, rows[0].get('reason', 'not measured') if rows else
                        'no FLOOR record')
    out = {fv.variable(int(r['size'])): perf_record(check, 'FLOOR', fv.field, fv.unit,
                                                    size=r['size'])
           for r in measured for fv in experiments.FLOOR_VARIABLES}
    if all(experiments.CPU_WAIT in r for r in measured):    # the kernel read its run delay
        out[experiments.CPU_WAIT] = largest_field(check, 'FLOOR', experiments.CPU_WAIT,
                                                  experiments.UNITS[experiments.CPU_WAIT])
    return out


def largest_field(check, rectype: str, field: str, unit: str):
    """A performance function: the largest value of ``field`` over the records of a type."""
    @sn.deferrable
    def value():
        return max(float(r[field]) for r in _stdout_records(check)[rectype] if field in r)

    return sn.make_performance_function(value(), unit)


def no_floor(check, why: str | None = None) -> dict:
    """Notes ``no floor: <why>`` on a launch whose figures have no floor (by default why its
    check has none, as the experiments table says); no floor variables (an empty dict)."""
    why = why or experiments.BY_CHECK[type(check).__name__].no_floor
    check.notes = check.notes + [f'no floor: {why}']
    return {}


def with_own_costs(check, variables: dict) -> dict:
    """``variables`` and, for each key variable of the check whose floor is among them, its
    own cost over that floor (``experiments.own_costs``: ``own_latency_8B``, a factor, worse
    up), a deferred expression of the two: ReFrame's ``$ref`` bounds it in one launch, where a
    machine's regime moves the raw figure and its floor alike."""
    name = type(check).__name__
    own = {}
    for cost, variable, floor in experiments.own_costs(name):
        if variable in variables and floor in variables:
            lower = experiments.direction(name, variable) == experiments.LOWER_IS_BETTER
            ratio = (variables[variable] / variables[floor] if lower else
                     variables[floor] / variables[variable])
            own[cost] = sn.make_performance_function(ratio, 'x')
    return {**variables, **own}
