"""The hardware floor of the two-rank sweeps (src/kernels/common/cc_floor.c), C and Fortran.

Every launch of pingpong and comms2 measures, with the same two ranks, a ping-pong without
MPI at the sweep's smallest and largest sizes, 8 B and 1 KiB (shared memory here, both ranks
on one node; ``--floor tcp`` forces the TCP floor used between nodes), validated like the MPI
messages (the mutants of test_mutants.py break it). Records and arithmetic are checked here,
never speed.
"""

import pytest

from commcheck import experiments
from commcheck.analysis import gate, kernel_records
from commcheck.bench import gate as bench_gate
from tests.conftest import REFERENCE_STACKS as STACKS
from tests.conftest import mpirun, needs_stacks

pytestmark = needs_stacks()

ARGS = ('--sizes', '1:4096', '--iters', '20', '--warmup', '2')
FLOOR_SIZES = [1, 8, 1024, 4096]        # smallest, 8 B, 1 KiB, largest
FIELDS = ['size', 'kind', 'iters', 'batches', 'rtt_us', 'oneway_us', 'bw_MBps',
          experiments.CPU_WAIT]
CASES = [(s, f'{k}-{lang}') for s in STACKS for k in ('pingpong', 'comms2')
         for lang in ('c', 'f') if lang == 'c' or s.has_fortran]
IDS = [f'{s.name}-{p}' for s, p in CASES]


def floors(done) -> list[dict]:
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    assert out['PASS'], done.stdout
    return out['FLOOR']


@pytest.mark.parametrize('stack,program', CASES, ids=IDS)
@pytest.mark.parametrize('mode,kind', [(None, 'shm'), ('tcp', 'tcp')])
def test_the_floor_is_measured_beside_the_sweep(kernel_builds, stack, program, mode, kind):
    extra = ('--floor', mode) if mode else ()
    rows = floors(mpirun(stack, 2, kernel_builds[stack.name] / program, *ARGS, *extra))
    assert [r['size'] for r in rows] == FLOOR_SIZES
    for r in rows:
        assert list(r) == FIELDS and r['kind'] == kind and (r['iters'], r['batches']) == (20, 10)
        assert r['oneway_us'] == pytest.approx(r['rtt_us'] / 2, rel=1e-3, abs=1e-4)
        assert r['bw_MBps'] == pytest.approx(r['size'] / r['oneway_us'], rel=5e-3, abs=6e-3)
        assert r['rtt_us'] > 0
        assert 0 <= r[experiments.CPU_WAIT] <= 1.01     # a share of the size's measuring


def test_busy_loops_on_the_cores_show_as_cpu_wait(kernel_builds):
    """A busy loop on every core makes the ranks wait for their CPUs: the FLOOR records say
    so (the gate then reads the launch as a contended machine). Only the loaded case is
    asserted: a quiet machine's share depends on its neighbours."""
    stack = STACKS[0]
    loops = bench_gate.busy_loops()
    try:
        rows = floors(mpirun(stack, 2, kernel_builds[stack.name] / 'pingpong-c', '--sizes',
                             '8:1048576', '--iters', '400', '--warmup', '40'))
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    assert max(r[experiments.CPU_WAIT] for r in rows) > gate.CONTENDED, rows


@pytest.mark.parametrize('stack,program', CASES, ids=IDS)
def test_no_floor_says_why_and_still_measures_mpi(kernel_builds, stack, program):
    rows = floors(mpirun(stack, 2, kernel_builds[stack.name] / program, *ARGS, '--floor', 'no'))
    assert rows == [{'kind': 'none', 'reason': 'not asked for (--floor no)'}]


@pytest.mark.parametrize('stack,program', CASES, ids=IDS)
def test_a_bad_floor_option_is_one_line_and_exit_2(kernel_builds, stack, program):
    done = mpirun(stack, 2, kernel_builds[stack.name] / program, '--floor', 'maybe')
    errors = [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]
    assert done.returncode == 2 and len(errors) == 1 and "'maybe'" in errors[0], done.stderr


def test_floor_variables_are_declared_once_and_pair_with_key_variables():
    for check in ('PingPong', 'ParkbenchComms'):
        for key, floor in experiments.BY_CHECK[check].floors:
            assert key in experiments.key_variables(check)
            declared = experiments.floor_variable(floor)
            assert declared and experiments.direction(check, floor) == declared.direction
    assert experiments.floor_variable('floor_bw_1048576B').unit == 'MB/s'
    assert experiments.floor_variable('latency_8B') is None
    # the checks' own floors (not hardware ones): judged the way their key variable goes
    for check in ('Stencil', 'DerivedDatatypes'):
        for key, floor in experiments.BY_CHECK[check].floors:
            assert key in experiments.key_variables(check) and experiments.is_floor(check, floor)
            assert experiments.direction(check, floor) == experiments.direction(check, key)
            assert experiments.own_cost_of(check, experiments.own_variable(key)) == (key, floor)
    assert not experiments.is_floor('Stencil', 'time')
    assert experiments.BY_CHECK['Collectives'].no_floor and not experiments.own_costs('Collectives')
