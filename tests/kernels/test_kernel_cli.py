"""Every kernel on every stack: valid runs pass, bad input exits 2, corrupted data exits 3."""

import pytest

from commcheck import records
from tests.conftest import STACKS, mpirun, needs_stacks

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

# program -> [(arguments, ranks, what the one ERROR line must mention)]
BAD_INPUT = {
    'pingpong': [(['--sizes', '0'], 2, 'positive'), (['--sizes', 'abc'], 2, 'byte count'),
                 (['--iters', 'x'], 2, 'whole number'), (['--iters', '-1'], 2, 'range'),
                 (['--sizes', '999999g'], 2, '--sizes'), ([], 3, '2 ranks'),
                 (['--bogus'], 2, '--bogus')],
    'comms2': [(['--sizes', '-8'], 2, ''), ([], 1, '2 ranks')],
    'dtype': [(['--send-mode', 'diagonal'], 2, 'diagonal'), (['--stride', '0'], 2, ''),
              (['--type', 'double', '--sizes', '12'], 2, ''), ([], 3, '2 ranks')],
    'stencil': [(['--n', '47'], 4, 'divisible'), (['--n', '0'], 4, ''),
                (['--variant', 'seq'], 4, 'seq'), (['--variant', 'warp'], 1, 'warp')],
    'stream': [(['--n', 'many'], 1, 'whole number')],
    'fptr': [(['--variant', 'pointer'], 2, '1 rank'), (['--n', '-5'], 1, '')],
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
    out = records.parse(done.stdout)
    meta = out['META'][0]
    assert meta['kernel'] == kernel and int(meta['ranks']) == ranks
    assert meta['lang'] == ('c' if program.endswith('-c') else 'fortran')
    assert stack.mpi.version in meta['mpi'] or stack.mpi.flavour == 'openmpi'
    assert len(out['PASS']) == 1
    if ndata is None:
        assert len(out['RESULT']) == 1
    else:
        assert len(out['DATA']) == ndata
        assert all(float(v) > 0 for r in out['DATA'] for k, v in r.items() if k.endswith('_us'))


@pytest.mark.parametrize('stack,kernel,program', CASES, ids=CASE_IDS)
def test_corrupted_data_is_caught(kernel_builds, stack, kernel, program):
    ranks, args, _ = PROGRAMS[kernel]
    done = mpirun(stack, ranks, kernel_builds[stack.name] / program, *args, '--inject-error')
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert 'ERROR: validation failed' in done.stderr
    assert not records.parse(done.stdout)['PASS']


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
                heats[(stack.name, program, variant)] = records.parse(done.stdout)['RESULT'][0]
    reference = next(iter(heats.values()))
    for key, result in heats.items():
        assert result['total_heat'] == pytest.approx(reference['total_heat'], rel=1e-12), key
        assert result['checksum'] == pytest.approx(reference['checksum'], rel=1e-12), key
