"""The fabric kernels (pairsweep-c, collectives-c) on every reference stack: valid runs pass and
say what they measured, bad input exits 2 with one ERROR line, corrupted data exits 3, and
deliberately broken kernels (mutants, built the way tests/kernels/test_mutants.py builds its
own) fail their validation."""

import itertools
from concurrent.futures import ThreadPoolExecutor

import pytest

from commcheck.analysis import kernel_records
from tests.conftest import REFERENCE_STACKS as STACKS
from tests.conftest import mpirun, needs_stacks
from tests.kernels.test_mutants import Workspace, run_program

pytestmark = [needs_stacks(), pytest.mark.skipif(not STACKS, reason='no Debian MPI stack')]

SWEEP = ('--lat-iters', '20', '--bw-iters', '4', '--bw-size', '64k', '--batches', '4')
COLL = ('--sizes', '8,1k,64k', '--iters', '10', '--warmup', '2')
PAIR_FIELDS = ['a', 'b', 'ra', 'rb', 'round', 'pass', 'latency_us', 'latency_best_us', 'bw_ab_MBps',
               'bw_ab_best_MBps', 'bw_ba_MBps', 'bw_ba_best_MBps']
IDS = [s.name for s in STACKS]


def run(stack, builds, program, ranks, *args, timeout=120):
    done = mpirun(stack, ranks, builds[stack.name] / program, *args, timeout=timeout)
    return done, (kernel_records.parse(done.stdout) if done.returncode == 0 else None)


@pytest.mark.parametrize('stack', STACKS, ids=IDS)
def test_every_pair_once_in_rounds_of_disjoint_pairs(kernel_builds, stack):
    for ranks, extra, rounds in ((4, (), 3), (3, (), 3), (5, ('--rounds', '2'), 2),
                                 (4, ('--serial', '--passes', '2'), 3)):
        done, out = run(stack, kernel_builds, 'pairsweep-c', ranks, *SWEEP, *extra)
        assert done.returncode == 0, (ranks, extra, done.stderr)
        passes = 2 if '--passes' in extra else 1
        assert all(list(r) == PAIR_FIELDS for r in out['DATA']), out['DATA'][0]
        assert sorted({r['pass'] for r in out['DATA']}) == list(range(passes))
        assert len(out['DATA']) == passes * rounds * (ranks // 2), (ranks, extra, out['DATA'])
        data = [r for r in out['DATA'] if r['pass'] == 0]
        assert len({(r['ra'], r['rb']) for r in data}) == len(data)      # no pair twice
        assert all(r['ra'] < r['rb'] for r in data)
        by_round = {}                                                    # disjoint in a round
        for r in data:
            by_round.setdefault(r['round'], []).extend((r['ra'], r['rb']))
        assert len(by_round) == rounds and all(len(m) == len(set(m)) for m in by_round.values())
        if '--rounds' not in extra:
            assert {(r['ra'], r['rb']) for r in data} == set(itertools.combinations(
                range(ranks), 2))
        for r in data:
            assert 0 < r['latency_best_us'] <= r['latency_us'] * (1 + 1e-6)
            assert 0 < r['bw_ab_MBps'] <= r['bw_ab_best_MBps'] * (1 + 1e-6)
            assert 0 < r['bw_ba_MBps'] <= r['bw_ba_best_MBps'] * (1 + 1e-6)
        result, meta = out['RESULT'][0], out['META'][0]
        assert (result['pairs'], result['rounds']) == (len(data), rounds)
        assert meta['serial'] == int('--serial' in extra) and meta['nodes'] == ranks
        assert (meta['passes'], result['passes']) == (passes, passes)
        assert out['PASS'] and out['PASS'][0]['validated'] > 0


@pytest.mark.parametrize('stack', STACKS, ids=IDS)
def test_every_collective_and_size_is_reported(kernel_builds, stack):
    done, out = run(stack, kernel_builds, 'collectives-c', 3, *COLL)
    assert done.returncode == 0, done.stderr
    got = [(r['op'], r['size']) for r in out['DATA']]
    assert got == [(op, s) for op in ('allreduce', 'alltoall', 'bcast') for s in (8, 1024, 65536)
                   ] + [('barrier', 0)]
    assert all(r['time_us'] > 0 and r['time_mean_us'] > 0 for r in out['DATA'])
    # every call (1 first warm-up + 2 warm-up + 10 timed + 1 checked) of allreduce and
    # alltoall on every rank, of bcast on the non-roots
    assert out['PASS'][0]['validated'] == 3 * (3 * 14 + 3 * 14) + 2 * 3 * 14
    done, out = run(stack, kernel_builds, 'collectives-c', 2, '--ops', 'bcast', *COLL)
    assert [r['op'] for r in out['DATA']] == ['bcast'] * 3


@pytest.mark.parametrize('stack', STACKS, ids=IDS)
def test_corrupted_data_is_caught(kernel_builds, stack):
    cases = [('pairsweep-c', 4, SWEEP), ('pairsweep-c', 3, SWEEP)] + [
        ('collectives-c', n, ('--ops', op, *COLL)) for op in ('allreduce', 'alltoall', 'bcast')
        for n in (2, 3)]
    for program, ranks, args in cases:
        done, _ = run(stack, kernel_builds, program, ranks, *args, '--inject-error')
        assert done.returncode == 3, (program, ranks, args, done.returncode, done.stderr)
        assert 'ERROR: validation failed' in done.stderr
        assert 'PASS' not in done.stdout


BAD = [('pairsweep-c', 1, (), 'at least 2 ranks'), ('pairsweep-c', 4, ('--rounds', '4'), '3'),
       ('pairsweep-c', 2, ('--bw-size', 'x'), 'byte count'),
       ('pairsweep-c', 2, ('--lat-iters', '3', '--batches', '4'), '--batches'),
       ('pairsweep-c', 2, ('--bogus',), '--bogus'),
       ('collectives-c', 1, (), 'at least 2 ranks'),
       ('collectives-c', 2, ('--sizes', '12'), 'doubles'),
       ('collectives-c', 2, ('--ops', 'gather'), 'gather'),
       ('collectives-c', 2, ('--iters', '0'), '--iters')]


@pytest.mark.parametrize('stack', STACKS, ids=IDS)
def test_bad_input_gives_one_error_line_and_exit_2(kernel_builds, stack):
    for program, ranks, args, mentions in BAD:
        done, _ = run(stack, kernel_builds, program, ranks, *args, timeout=60)
        errors = [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]
        assert done.returncode == 2, (program, args, done.returncode, done.stderr)
        assert len(errors) == 1 and mentions in errors[0], (program, args, errors)


# (name, program, file, old, new, runs): realistic defects the validation must catch.
MUTANTS = [
    ('allreduce-max-not-sum', 'collectives-c', 'fabric/collectives.c',
     'MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD', 'MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD',
     ((3, ('--ops', 'allreduce', *COLL)),)),
    ('allreduce-misses-last-element', 'collectives-c', 'fabric/collectives.c',
     'MPI_Allreduce(in, out, (int)count,', 'MPI_Allreduce(in, out, (int)count - (count > 1),',
     ((2, ('--ops', 'allreduce', *COLL)), (3, ('--ops', 'allreduce', *COLL)))),
    ('alltoall-blocks-swapped', 'collectives-c', 'fabric/collectives.c',
     '        cc_payload_stamp(sbuf + (size_t)d * size, size, me * n + d, seq_of(size, it));',
     '        cc_payload_stamp(sbuf + (size_t)(n - 1 - d) * size, size, me * n + d, '
     'seq_of(size, it));', ((3, ('--ops', 'alltoall', *COLL)),)),
    ('echo-sends-back-what-it-got', 'pairsweep-c', 'fabric/pairsweep.c',
     '        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD));\n    }',
     '        CC_CHECK(MPI_Send(rbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD));\n    }',
     ((4, SWEEP),)),
]


def build_mutants(stack, root):
    work = Workspace(stack, root)
    built = {}
    for name, program, rel, old, new, _ in MUTANTS:
        path = work.src / rel
        assert path.read_text().count(old) == 1, (name, old)
        with work.patched(((rel, old, new),)):
            built[name] = work.build_program(program, root / 'mutants' / name)
    return built


@pytest.fixture(scope='module')
def mutant_builds(tmp_path_factory):
    roots = [tmp_path_factory.mktemp(f'fabmut-{s.name}') for s in STACKS]
    with ThreadPoolExecutor(max_workers=len(STACKS)) as pool:
        return dict(zip((s.name for s in STACKS), pool.map(build_mutants, STACKS, roots)))


@pytest.mark.parametrize('stack', STACKS, ids=IDS)
def test_every_mutant_fails_validation(mutant_builds, kernel_builds, stack):
    survivors = []
    for name, program, _, _, _, runs in MUTANTS:
        for ranks, args in runs:
            outcome = run_program(stack, mutant_builds[stack.name][name], ranks, args)
            if not outcome.killed:
                survivors.append(f'{name}: {outcome.describe()}')
            control = run_program(stack, kernel_builds[stack.name] / program, ranks, args)
            assert control.clean_pass, control.describe()
    assert not survivors, survivors
