"""Every kernel on every stack: valid runs pass, bad input exits 2, corrupted data exits 3."""

import re
import shutil

import pytest

from commcheck import paths
from commcheck.analysis import kernel_records
from commcheck.site import kbuild
from tests.conftest import REFERENCE_STACKS as STACKS
from tests.conftest import mpirun, needs_stacks, relayed

pytestmark = needs_stacks()

# program -> (ranks, quick valid arguments, expected DATA count (None: RESULT only))
PROGRAMS = {
    'pingpong': (2, ['--sizes', '1:4096', '--iters', '20', '--warmup', '2'], 13),
    'comms2': (2, ['--sizes', '8,64,1k', '--iters', '20', '--warmup', '2'], 3),
    'dtype': (2, ['--type', 'double', '--send-mode', 'stride', '--recv-mode', 'loop',
                  '--sizes', '64:1024', '--iters', '10', '--warmup', '1'], 5),
    'stencil': (4, ['--variant', 'shmnc', '--n', '48', '--steps', '10'], None),
    'stream': (2, ['--n', '100000', '--reps', '2'], None),
    'fptr': (1, ['--variant', 'cptr', '--n', '64', '--steps', '2'], None),
}
C_ONLY = {'stream'}
FORTRAN_ONLY = {'fptr'}

# kernel -> the fields of its DATA records, in order
DATA_FIELDS = {
    'pingpong': ['size', 'iters', 'batches', 'rtt_us', 'oneway_us', 'bw_MBps', 'rtt_mean_us'],
    'comms2': ['size', 'iters', 'batches', 'exchange_us', 'msg_us', 'bw_MBps',
               'exchange_mean_us'],
    'dtype': ['size', 'count', 'iters', 'batches', 'rtt_us', 'oneway_us', 'bw_MBps',
              'rtt_mean_us'],
}
# The first line of MPI_Get_library_version names the library and its version
# ("Open MPI v4.1.4, package: ...", "MPICH Version: 4.0.2"); other flavours: the version.
LIBRARY_STRING = {'openmpi': r'Open MPI v{}\b', 'mpich': r'MPICH Version:\s+{}\b'}

# The timed kernels' batch options: more batches than iterations, none, or not a number.
BAD_BATCHES = [(['--iters', '20', '--batches', '21'], 2, 'more than --iters 20'),
               (['--iters', '20', '--batches', '0'], 2, '--batches'),
               (['--batches', '-3'], 2, '--batches'), (['--batches', 'ten'], 2, 'whole number')]

# program -> [(arguments, ranks, what the one ERROR line must mention)]
BAD_INPUT = {
    'pingpong': [(['--sizes', '0'], 2, 'positive'), (['--sizes', 'abc'], 2, 'byte count'),
                 (['--iters', 'x'], 2, 'whole number'), (['--iters', '-1'], 2, 'range'),
                 (['--sizes', '999999g'], 2, '--sizes'), ([], 3, '2 ranks'),
                 (['--bogus'], 2, '--bogus'), *BAD_BATCHES],
    'comms2': [(['--sizes', '-8'], 2, ''), ([], 1, '2 ranks'), *BAD_BATCHES],
    'dtype': [(['--send-mode', 'diagonal'], 2, 'diagonal'), (['--stride', '0'], 2, ''),
              (['--type', 'double', '--sizes', '12'], 2, ''), ([], 3, '2 ranks'),
              *BAD_BATCHES],
    'stencil': [(['--n', '47'], 4, 'divisible'), (['--n', '0'], 4, ''),
                (['--variant', 'seq'], 4, 'seq'), (['--variant', 'warp'], 1, 'warp'),
                (['--verify', 'maybe'], 1, 'maybe'),
                (['--verify', 'no', '--inject-error'], 1, '--inject-error'),
                (['--baseline', 'maybe'], 4, 'maybe'),
                (['--variant', 'seq', '--baseline', 'yes'], 1, '--baseline')],
    'stream': [(['--n', 'many'], 1, 'whole number')],
    'fptr': [(['--variant', 'pointer'], 2, '1 rank'), (['--n', '-5'], 1, ''),
             (['--baseline', 'maybe'], 1, 'maybe')],
}


def programs_for(stack):
    for kernel in PROGRAMS:
        langs = ['f'] if kernel in FORTRAN_ONLY else ['c'] if kernel in C_ONLY else ['c', 'f']
        for lang in langs:
            if lang == 'c' or stack.has_fortran:
                yield kernel, f'{kernel}-{lang}'


CASES = [(s, k, p) for s in STACKS for k, p in programs_for(s)]
CASE_IDS = [f'{s.name}-{p}' for s, _, p in CASES]


@pytest.mark.parametrize('stack,kernel,program', CASES, ids=CASE_IDS)
def test_valid_run_passes_and_reports(kernel_builds, stack, kernel, program):
    ranks, args, ndata = PROGRAMS[kernel]
    done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args)
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    meta = out['META'][0]
    assert meta['kernel'] == kernel and int(meta['ranks']) == ranks
    assert meta['lang'] == ('c' if program.endswith('-c') else 'fortran')
    assert stack.mpi.version, f'{stack.name}: the MPI version was not discovered'
    library = LIBRARY_STRING.get(stack.mpi.flavour, r'\b{}\b')
    assert re.search(library.format(re.escape(stack.mpi.version)), meta['mpi']), meta['mpi']
    assert len(out['PASS']) == 1
    # dtype: the sweep's share of waiting for a CPU (its ranks' run delay), one record
    assert [0 <= r['cpu_wait'] <= 1.01 for r in out['WAIT']] == ([True] if kernel == 'dtype'
                                                                  else []), out['WAIT']
    if ndata is None:
        assert len(out['RESULT']) == 1
    else:
        assert len(out['DATA']) == ndata
        assert all(float(v) > 0 for r in out['DATA'] for k, v in r.items() if k.endswith('_us'))
    if kernel in DATA_FIELDS:
        assert all(list(r) == DATA_FIELDS[kernel] for r in out['DATA']), out['DATA'][0]
        assert int(meta['batches']) == 10 and all(r['batches'] == 10 for r in out['DATA'])


@pytest.mark.parametrize('stack,kernel,program',
                         [c for c in CASES if c[1] in DATA_FIELDS],
                         ids=[i for i, c in zip(CASE_IDS, CASES) if c[1] in DATA_FIELDS])
def test_batches_split_the_timed_iterations(kernel_builds, stack, kernel, program):
    """Times are medians of batch means: 7 iterations default to 7 batches, --batches is
    honoured, and the per-message time and bandwidth follow from the reported median."""
    ranks, args, _ = PROGRAMS[kernel]
    time_key = 'exchange_us' if kernel == 'comms2' else 'rtt_us'
    per_msg = {'comms2': ('msg_us', 4)}.get(kernel, ('oneway_us', 2))
    for extra, batches in ((['--iters', '7'], 7), (['--iters', '9', '--batches', '4'], 4)):
        done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args, *extra)
        assert done.returncode == 0, done.stderr
        out = kernel_records.parse(done.stdout)
        assert int(out['META'][0]['batches']) == batches and out['PASS']
        for r in out['DATA']:
            assert (r['batches'], r['iters']) == (batches, int(extra[1]))
            assert r[per_msg[0]] == pytest.approx(r[time_key] / per_msg[1], rel=1e-3, abs=1e-3)
            # printed with 2 (dtype) or 4 decimals
            assert r['bw_MBps'] == pytest.approx(r['size'] / r[per_msg[0]], rel=5e-3, abs=6e-3)
            assert r[f'{time_key[:-3]}_mean_us'] > 0


STENCIL_CASES = [(s, p) for s, k, p in CASES if k == 'stencil']
STENCIL_IDS = [f'{s.name}-{p}' for s, p in STENCIL_CASES]


@pytest.mark.parametrize('stack,program', STENCIL_CASES, ids=STENCIL_IDS)
def test_stencil_verifies_every_cell_or_says_it_did_not(kernel_builds, stack, program):
    """A verified run compares all N*N cells (PASS validated=N*N, RESULT verified=1); with
    --verify no the run still reports, but says verified=0 and prints no PASS at all."""
    binary = kernel_builds[stack.name] / program
    for variant, ranks in (('seq', 1), ('nb', 2)):
        args = ['--variant', variant, '--n', '48', '--steps', '5']
        done = mpirun(stack, ranks, binary, *args)
        assert done.returncode == 0, done.stderr
        out = kernel_records.parse(done.stdout)
        assert out['RESULT'][0]['verified'] == 1 and out['PASS'] == [{'validated': 48 * 48}]
        unverified = mpirun(stack, ranks, binary, *args, '--verify', 'no')
        assert unverified.returncode == 0, unverified.stderr
        out_no = kernel_records.parse(unverified.stdout)
        assert out_no['RESULT'][0]['verified'] == 0 and not out_no['PASS']
        assert out_no['META'][0]['verify'] == 'no'
        assert out_no['RESULT'][0]['checksum'] == out['RESULT'][0]['checksum']


@pytest.mark.parametrize('stack,program', STENCIL_CASES, ids=STENCIL_IDS)
def test_stencil_baseline_pairs_sequential_runs_in_the_same_launch(kernel_builds, stack,
                                                                   program):
    """--baseline yes (1 rank): a sequential run before each of the variant's; RESULT adds the
    sequential median and the median of the pairs' ratios, and the variant's own result is
    what it is without the baseline (same heat and checksum, verified, same number of runs)."""
    binary = kernel_builds[stack.name] / program
    args = ['--n', '96', '--steps', '20', '--reps', '3']
    for variant in ('nb', 'shm', 'hybrid'):
        plain = mpirun(stack, 1, binary, '--variant', variant, *args)
        paired = mpirun(stack, 1, binary, '--variant', variant, *args, '--baseline', 'yes')
        assert plain.returncode == 0 and paired.returncode == 0, paired.stderr
        alone, both = (kernel_records.parse(done.stdout) for done in (plain, paired))
        ra, rb = alone['RESULT'][0], both['RESULT'][0]
        assert 'seq_ratio' not in ra and 'seq_time_s' not in ra
        assert alone['PASS'] == both['PASS'] == [{'validated': 96 * 96}]
        assert (rb['total_heat'], rb['checksum']) == (ra['total_heat'], ra['checksum'])
        assert rb['reps'] == 3 and rb['seq_time_s'] > 0 and rb['seq_ratio'] > 0


@pytest.mark.parametrize('stack,program', STENCIL_CASES, ids=STENCIL_IDS)
def test_stencil_floor_pairs_compute_only_runs_at_more_ranks(kernel_builds, stack, program):
    """--baseline yes at 2 and 4 ranks: a compute-only run of the same steps on every rank's
    block before each of the variant's; RESULT adds floor_time_s (no sequential figures), the
    variant's own result is what it is without the floor, and the floor's blocks were checked
    (a broken floor is the mutants' test: floor-no-steps)."""
    binary = kernel_builds[stack.name] / program
    args = ['--n', '96', '--steps', '20', '--reps', '3']
    for variant, ranks in (('sr', 2), ('nb', 4), ('shmnc', 4)):
        plain = mpirun(stack, ranks, binary, '--variant', variant, *args)
        paired = mpirun(stack, ranks, binary, '--variant', variant, *args, '--baseline', 'yes')
        assert plain.returncode == 0 and paired.returncode == 0, paired.stderr
        alone, both = (kernel_records.parse(done.stdout) for done in (plain, paired))
        ra, rb = alone['RESULT'][0], both['RESULT'][0]
        assert 'floor_time_s' not in ra and 'seq_ratio' not in rb and 'seq_time_s' not in rb
        assert alone['PASS'] == both['PASS'] == [{'validated': 96 * 96}]
        assert (rb['total_heat'], rb['checksum']) == (ra['total_heat'], ra['checksum'])
        assert rb['reps'] == 3 and rb['floor_time_s'] > 0


@pytest.mark.parametrize('stack,kernel,program', CASES, ids=CASE_IDS)
def test_corrupted_data_is_caught(kernel_builds, stack, kernel, program):
    ranks, args, _ = PROGRAMS[kernel]
    done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args, '--inject-error')
    assert relayed(done, 3, stack, ranks), (done.returncode, done.stderr)
    assert 'ERROR: validation failed' in done.stderr
    assert not kernel_records.parse(done.stdout)['PASS']


@pytest.mark.parametrize('stack,kernel,program', CASES, ids=CASE_IDS)
def test_bad_input_gives_one_error_line_and_exit_2(kernel_builds, stack, kernel, program):
    for args, ranks, mentions in BAD_INPUT[kernel]:
        done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args, timeout=60)
        errors = [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]
        assert done.returncode == 2, (args, ranks, done.returncode, done.stderr)
        assert len(errors) == 1, (args, done.stderr)
        assert mentions in errors[0], (args, errors[0])


@pytest.mark.parametrize('stack,kernel,program', CASES, ids=CASE_IDS)
def test_help_exits_0(kernel_builds, stack, kernel, program):
    done = mpirun(stack, 1, kernel_builds[stack.name] / program, '--help')
    assert done.returncode == 0 and '--inject-error' in done.stdout


@pytest.mark.skipif(len(STACKS) < 1, reason='no stack')
def test_stencil_variants_agree_across_languages_and_stacks(kernel_builds):
    """Every variant, language and stack computes the same heat as C's sequential run."""
    heats = {}
    for stack in STACKS:
        for program in ('stencil-c', 'stencil-f') if stack.has_fortran else ('stencil-c',):
            for variant, ranks in (('seq', 1), ('sr', 4), ('nb', 4), ('shm', 4), ('hybrid', 4)):
                extra = ['--node-size', '2'] if variant == 'hybrid' else []
                done = mpirun(stack, ranks, kernel_builds[stack.name] / program, '--variant',
                              variant, '--n', '96', '--steps', '20', *extra)
                assert done.returncode == 0, done.stderr
                heats[(stack.name, program, variant)] = \
                    kernel_records.parse(done.stdout)['RESULT'][0]
    reference = next(iter(heats.values()))
    for key, result in heats.items():
        assert result['total_heat'] == pytest.approx(reference['total_heat'], rel=1e-12), key
        assert result['checksum'] == pytest.approx(reference['checksum'], rel=1e-12), key


STREAM_CASES = [(s, p) for s, k, p in CASES if k == 'stream']
STREAM_IDS = [f'{s.name}-{p}' for s, p in STREAM_CASES]


@pytest.mark.parametrize('stack,program', STREAM_CASES, ids=STREAM_IDS)
def test_stream_aggregate_counts_the_last_rank(kernel_builds, stack, program):
    """The aggregate bandwidth is all ranks' bytes over the elapsed time from the first rank's
    start to the last rank's end: with rank 1 starting each loop 40 ms late, every rep lasts at
    least 40 ms, so the aggregate cannot exceed bytes / 40 ms (a per-rank clock, which does not
    see the wait, would report the full speed of both ranks)."""
    n, skew_s = 100000, 0.040
    done = mpirun(stack, 2, kernel_builds[stack.name] / program, '--n', str(n), '--reps', '2',
                  '--skew-ms', '40')
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    assert out['META'][0]['timing'] == 'enter-to-exit'
    result = out['RESULT'][0]
    assert result['copy_GBps'] <= 16.0 * n * 2 / skew_s / 1e9
    assert result['triad_GBps'] <= 24.0 * n * 2 / skew_s / 1e9
    assert result['copy_GBps_per_rank'] == pytest.approx(result['copy_GBps'] / 2, rel=1e-2,
                                                        abs=1e-3)


REPEATED = [(s, k, p) for s, k, p in CASES if k in ('stencil', 'fptr')]
#: The most timed runs a kernel makes (MAX_REPS in stencil.h, stencil_options.F90, fptr.F90).
MAX_REPS = 1000


@pytest.mark.parametrize('stack,kernel,program', REPEATED,
                         ids=[f'{s.name}-{p}' for s, _, p in REPEATED])
def test_repetitions_follow_reps_and_target_time(kernel_builds, stack, kernel, program):
    """--reps R runs at least R timed runs; --target-seconds S adds runs until their times add
    up to S and then stops: the reported median lies between the fastest and the slowest run,
    reps * slowest >= S, and (reps - 1) * fastest < S (the run before the last fell short)."""
    ranks, args, _ = PROGRAMS[kernel]
    keys = {'stencil': ('time_s', 'time_min_s', 'time_max_s'),
            'fptr': ('total_s', 'total_min_s', 'total_max_s')}[kernel]
    for extra, min_reps, target in ((['--reps', '3'], 3, 0.0),
                                    (['--reps', '2', '--target-seconds', '0.3'], 2, 0.3)):
        done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args, *extra)
        assert done.returncode == 0, done.stderr
        out = kernel_records.parse(done.stdout)
        result = out['RESULT'][0]
        median, fastest, slowest = (result[k] for k in keys)
        reps = result['reps']
        assert out['PASS'] and reps >= min_reps
        assert fastest <= median <= slowest
        if target == 0.0:
            assert reps == min_reps
        else:       # runs stop at the target, or at the kernels' cap of MAX_REPS runs
            assert reps == MAX_REPS or reps * slowest >= target - 1e-6
            assert reps == min_reps or (reps - 1) * fastest < target


@pytest.mark.parametrize('stack,kernel,program', REPEATED,
                         ids=[f'{s.name}-{p}' for s, _, p in REPEATED])
def test_repetition_options_refuse_bad_values(kernel_builds, stack, kernel, program):
    ranks = PROGRAMS[kernel][0]
    for bad, words in ((['--reps', '0'], '--reps'), (['--target-seconds', 'soon'], 'soon'),
                       (['--target-seconds', '-1'], '--target-seconds')):
        done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *bad)
        assert done.returncode == 2
        errors = [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]
        assert len(errors) == 1 and words in errors[0], done.stderr


FPTR_CASES = [(s, p) for s, k, p in CASES if k == 'fptr']


@pytest.mark.parametrize('stack,program', FPTR_CASES, ids=[f'{s.name}-{p}' for s, p in FPTR_CASES])
def test_fptr_baseline_pairs_each_run_with_an_allocatable_one(kernel_builds, stack, program):
    """--baseline yes: RESULT adds the allocatable runs' medians and the pairs' ratios; the
    median pair lies between the lowest and highest pair, and so does the ratio of the two
    medians (each run is at most the highest ratio times its pair's, so the medians are too).
    Without it, none of these fields."""
    args = ['--variant', 'cptr', '--n', '300', '--steps', '4', '--reps', '5']
    paired = ('base_read_s', 'base_total_s', 'read_ratio', 'total_ratio', 'total_ratio_min',
              'total_ratio_max')
    done = mpirun(stack, 1, kernel_builds[stack.name] / program, *args, '--baseline', 'yes')
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    r = out['RESULT'][0]
    assert out['PASS'] and out['META'][0]['baseline'] == 'yes' and r['reps'] == 5
    assert all(r[k] > 0 for k in paired)
    assert r['total_ratio_min'] <= r['total_ratio'] <= r['total_ratio_max']
    medians = r['total_s'] / r['base_total_s']       # fields rounded to 1e-6 s and 1e-4
    assert r['total_ratio_min'] * 0.99 <= medians <= r['total_ratio_max'] * 1.01
    alone = mpirun(stack, 1, kernel_builds[stack.name] / program, *args)
    assert alone.returncode == 0, alone.stderr
    result = kernel_records.parse(alone.stdout)['RESULT'][0]
    assert not set(paired) & set(result)


# STREAM's timed loop as it is (stream.c), the text the mutants below replace.
CURRENT_LOOP = """        double t0 = MPI_Wtime();
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        late_start(skew);
        for (size_t k = 0; k < len; k++)
            c[k] = a[k];
        double t1 = MPI_Wtime();
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t2 = MPI_Wtime();
        late_start(skew);
        for (size_t k = 0; k < len; k++)
            a[k] = b[k] + SCALAR * c[k];
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        times[2 * r] = t2 - t0;
        times[2 * r + 1] = MPI_Wtime() - t1;"""

# STREAM as it was first: every rank times its own loops (after its late start), the slowest
# counts.
PER_RANK_CLOCK = (
    (CURRENT_LOOP,
     """        late_start(skew);
        double t0 = MPI_Wtime();
        for (size_t k = 0; k < len; k++)
            c[k] = a[k];
        times[2 * r] = MPI_Wtime() - t0;
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        late_start(skew);
        t0 = MPI_Wtime();
        for (size_t k = 0; k < len; k++)
            a[k] = b[k] + SCALAR * c[k];
        times[2 * r + 1] = MPI_Wtime() - t0;"""),
    ('CC_CHECK(MPI_Bcast(times, 2 * reps, MPI_DOUBLE, 0, MPI_COMM_WORLD));',
     'CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, times, 2 * reps, MPI_DOUBLE, MPI_MAX, '
     'MPI_COMM_WORLD));'))


# STREAM as it was next: rank 0 read its clock after leaving each barrier, so a rank 0 that
# was descheduled there (an oversubscribed node) missed the other ranks' work: 9 ranks on 2
# cores read 57 GB/s against 36 at 2 ranks.
CLOCK_AFTER_BARRIER = ((CURRENT_LOOP, """        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        late_start(skew);
        double t0 = MPI_Wtime();
        for (size_t k = 0; k < len; k++)
            c[k] = a[k];
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t1 = MPI_Wtime();
        late_start(skew);
        double t2 = MPI_Wtime();
        for (size_t k = 0; k < len; k++)
            a[k] = b[k] + SCALAR * c[k];
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        times[2 * r] = t1 - t0;
        times[2 * r + 1] = MPI_Wtime() - t2;"""),)


@pytest.mark.parametrize('stack,program', STREAM_CASES, ids=STREAM_IDS)
def test_stream_aggregate_counts_a_late_first_rank(kernel_builds, stack, program):
    """Rank 0, whose clock counts, starting each loop 40 ms late (descheduled right after the
    barrier while rank 1 copies): every rep still lasts at least 40 ms on that clock."""
    n, lag_s = 100000, 0.040
    done = mpirun(stack, 2, kernel_builds[stack.name] / program, '--n', str(n), '--reps', '2',
                  '--lag-ms', '40')
    assert done.returncode == 0, done.stderr
    result = kernel_records.parse(done.stdout)['RESULT'][0]
    assert result['copy_GBps'] <= 16.0 * n * 2 / lag_s / 1e9
    assert result['triad_GBps'] <= 24.0 * n * 2 / lag_s / 1e9


def _stream_mutant(tmp_path, replacements):
    stack = STREAM_CASES[0][0]
    source = tmp_path / 'kernels'
    shutil.copytree(paths.KERNELS_SRC, source)
    text = (source / 'stream' / 'stream.c').read_text()
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (source / 'stream' / 'stream.c').write_text(text)
    return kbuild.cmake_build(stack, tmp_path / 'build', source, ['stream-c']) / 'stream-c'


@pytest.mark.skipif(not STREAM_CASES, reason='no stack')
def test_the_late_first_rank_test_catches_a_clock_read_after_the_barrier(tmp_path):
    """The bound above can fail: STREAM rebuilt with rank 0's clock read after the barrier
    reports far more than bytes / 40 ms when rank 0 starts late."""
    program = _stream_mutant(tmp_path, CLOCK_AFTER_BARRIER)
    done = mpirun(STREAM_CASES[0][0], 2, program, '--n', '100000', '--reps', '2',
                  '--lag-ms', '40')
    assert done.returncode == 0, done.stderr
    copy = kernel_records.parse(done.stdout)['RESULT'][0]['copy_GBps']
    assert copy > 16.0 * 100000 * 2 / 0.040 / 1e9


@pytest.mark.skipif(not STREAM_CASES, reason='no stack')
def test_the_stream_bound_test_catches_a_per_rank_clock(tmp_path):
    """The bound above can fail: STREAM rebuilt with the per-rank clock of before (each rank
    times its own loops, the slowest counts) reports far more than bytes / 40 ms."""
    program = _stream_mutant(tmp_path, PER_RANK_CLOCK)
    done = mpirun(STREAM_CASES[0][0], 2, program, '--n', '100000', '--reps', '2', '--skew-ms', '40')
    assert done.returncode == 0, done.stderr
    copy = kernel_records.parse(done.stdout)['RESULT'][0]['copy_GBps']
    assert copy > 16.0 * 100000 * 2 / 0.040 / 1e9
