"""The Java (MPJ Express multicore) and Python (mpi4py) kernels, real runs: the C kernels'
command line, records, exit codes and self-test.

mpi4py is built once per stack (minutes) and kept under the state directory, so only the
first session pays for it. Without javac/MPJ Express the Java tests skip, saying why; under
``CI=true`` a missing tool fails instead.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys

import pytest

from commcheck import experiments, paths
from commcheck.analysis import kernel_records
from commcheck.site import mpi4py_build, mpj
from tests.conftest import REFERENCE_STACKS

CI = os.environ.get('CI', '').strip().lower() == 'true'
PY_KERNELS = paths.KERNELS_SRC / 'python'


def missing(reason: str):
    if CI:
        pytest.fail(f'{reason} (CI=true: a missing tool is a failure, not a skip)')
    pytest.skip(reason)


def errors_of(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]


# -- the stacks mpi4py is built for in these tests (the main job builds it for every stack
# whose declaration has python) -----------------------------------------------------------
PY_STACKS = REFERENCE_STACKS


def _launcher(stack) -> str:
    return stack.mpi.launcher_command


def _stack_env(stack) -> dict[str, str]:
    pairs = getattr(stack.mpi, 'env_vars', None)
    if pairs is None:
        pairs = stack.job_env(as_root=os.geteuid() == 0).items()
    return {key: os.path.expandvars(value) for key, value in pairs}


@pytest.fixture(scope='session')
def mpi4py_dirs():
    """stack name -> directory with mpi4py built against that stack (cached in the state)."""
    built = {}

    def get(stack):
        if stack.name not in built:
            built[stack.name] = mpi4py_build.ensure_mpi4py(stack.mpi.cc, stack.mpi.version,
                                                           paths.CACHE_DIR)
        return built[stack.name]
    return get


def py_run(stack, mpi4py_dir, ranks: int, script: str, *args: str, timeout: int = 120):
    # what the jobs get (rfm/build.py): the stack's mpi4py and the settings its record names
    # (the wheel: MPI4PY_LIBMPI, and LD_LIBRARY_PATH where the library is linked under the
    # wheel's name); without them the wheel loads whichever libmpi the loader finds first
    settings = mpi4py_build.build_info(mpi4py_dir).get('env', {})
    env = dict(os.environ, **_stack_env(stack), **settings, PYTHONPATH=str(mpi4py_dir))
    cmd = [_launcher(stack), '-n', str(ranks), sys.executable, str(PY_KERNELS / script), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


# -- Java ---------------------------------------------------------------------------------------
@pytest.fixture(scope='session')
def java_kernels(tmp_path_factory):
    """(MPJ_HOME, kernels jar), made in this session's temporary directory."""
    for tool in ('javac', 'java'):
        if not shutil.which(tool):
            missing(f'{tool} not found: the Java kernels need a JDK')
    if not (mpj.DEBIAN_MPJ / 'lib' / 'starter.jar').exists():
        missing('MPJ Express (Debian libmpj-java) is not installed')
    state = tmp_path_factory.mktemp('mpj-state')
    home = mpj.mpj_home(state)
    return home, mpj.compile_kernels(state / 'java', home)


JAVA_VALID = {
    'PingPong': (['--sizes', '1:4096', '--iters', '20', '--warmup', '2'], 13, 2 * 22 * 13),
    'Comms2': (['--sizes', '8,64,1k', '--iters', '20', '--warmup', '2'], 3, 2 * 2 * 22 * 3),
    'Dtype': (['--type', 'double', '--send-mode', 'stride', '--recv-mode', 'loop',
               '--sizes', '64:1024', '--iters', '10', '--warmup', '1'], 5, None),
}
#: Java main class -> kernel, from the table of experiments.
JAVA_KERNEL = {cls.split('.')[-1]: kernel for kernel, cls in experiments.JAVA_CLASSES.items()}


@pytest.mark.parametrize('program', list(JAVA_VALID))
def test_java_valid_run(java_kernels, program):
    home, jar = java_kernels
    args, ndata, validated = JAVA_VALID[program]
    done = mpj.run(home, 2, jar, program, *args)
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    meta = out['META'][0]
    assert (meta['kernel'], meta['lang'], meta['ranks']) == (JAVA_KERNEL[program], 'java', 2)
    assert meta['mpi'].startswith('MPJ Express ') and meta['mpi'].endswith(' multicore')
    assert meta['batches'] == 10
    assert len(out['DATA']) == ndata
    for row in out['DATA']:
        assert row['batches'] == 10
        assert all(float(v) > 0 for k, v in row.items() if k.endswith('_us'))
    assert out['RESULT'][0]['first_message_us'] > 0
    assert len(out['PASS']) == 1
    assert validated is None or out['PASS'][0]['validated'] == validated


def test_java_dtype_gaps_and_modes_agree_with_each_other(java_kernels):
    """Every Java layout pair checks the same elements as dtype.c (useful ones + gaps)."""
    home, jar = java_kernels
    counts = {}
    for send, recv in (('contig', 'contig'), ('loop', 'stride'), ('stride', 'stride')):
        done = mpj.run(home, 2, jar, 'Dtype', '--send-mode', send, '--recv-mode', recv,
                       '--sizes', '64,512', '--iters', '4', '--warmup', '1', '--batches', '2')
        assert done.returncode == 0, done.stderr
        counts[(send, recv)] = kernel_records.parse(done.stdout)['PASS'][0]['validated']
    # byte, stride 64: contig checks 64+512 elements per rank; a strided buffer 64x as many.
    assert counts[('contig', 'contig')] == 2 * (64 + 512)
    assert counts[('loop', 'stride')] == (64 + 512) * 64 * 2
    assert counts[('stride', 'stride')] == (64 + 512) * 64 * 2


JAVA_BAD = [
    ('PingPong', ['--sizes', '0'], 2, 'positive'),
    ('PingPong', ['--iters', 'x'], 2, 'whole number'),
    ('PingPong', ['--iters', '5', '--batches', '6'], 2, '--batches'),
    ('PingPong', ['--bogus'], 2, '--bogus'),
    ('PingPong', [], 3, '2 ranks'),
    ('Comms2', ['--sizes', '-8'], 2, 'positive'),
    ('Comms2', [], 1, '2 ranks'),
    ('Dtype', ['--send-mode', 'pack'], 2, 'pack'),
    ('Dtype', ['--recv-mode', 'diagonal'], 2, 'diagonal'),
    ('Dtype', ['--type', 'double', '--sizes', '12'], 2, 'multiple'),
]


@pytest.mark.parametrize('program,args,ranks,mentions', JAVA_BAD,
                         ids=[f'{p}-{"_".join(a) or r}' for p, a, r, _ in JAVA_BAD])
def test_java_bad_input_exits_2_with_one_error_line(java_kernels, program, args, ranks,
                                                      mentions):
    home, jar = java_kernels
    done = mpj.run(home, ranks, jar, program, *args, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert len(errors_of(done)) == 1, done.stderr
    assert mentions in errors_of(done)[0]
    assert not kernel_records.parse(done.stdout)['PASS']


@pytest.mark.parametrize('program', list(JAVA_VALID))
def test_java_inject_error_exits_3(java_kernels, program):
    home, jar = java_kernels
    args, _, _ = JAVA_VALID[program]
    done = mpj.run(home, 2, jar, program, *args, '--inject-error')
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert len(errors_of(done)) == 1 and 'ERROR: validation failed' in done.stderr
    assert not kernel_records.parse(done.stdout)['PASS']
    if program != 'Dtype':
        # The stale message of timed iteration 10 of 20: caught by its stamp in the timed
        # loop, before any DATA record, not by the whole-payload check after it.
        assert 'iteration 10' in errors_of(done)[0], done.stderr
        assert not kernel_records.parse(done.stdout)['DATA']


def test_java_help_exits_0(java_kernels):
    home, jar = java_kernels
    for program in JAVA_VALID:
        done = mpj.run(home, 1, jar, program, '--help')
        assert done.returncode == 0 and '--inject-error' in done.stdout, done.stderr


def test_mpj_starter_jar_loses_the_exit_code(java_kernels):
    """Why mpj.launch_command bypasses starter.jar: through it bad input exits 0 and the ERROR
    line arrives on stdout. If this fails, MPJ Express changed and the starter may do."""
    home, jar = java_kernels
    done = subprocess.run(mpj.starter_command(home, 2, jar, 'PingPong', '--bogus'),
                          capture_output=True, text=True, timeout=60, env=mpj.launch_env(home))
    assert done.returncode == 0
    assert "ERROR: unknown option '--bogus'" in done.stdout and not errors_of(done)


def test_mpj_home_is_real_files_and_idempotent(java_kernels):
    home, _ = java_kernels
    lib = home / 'lib'
    for name in ('starter.jar', 'mpj.jar', *mpj.DEPENDENCY_JARS):
        assert (lib / name).is_file() and not (lib / name).is_symlink(), name
    before = (lib / 'mpj.jar').stat().st_mtime_ns
    assert mpj.mpj_home(home.parent) == home
    assert (lib / 'mpj.jar').stat().st_mtime_ns == before


# -- Python -------------------------------------------------------------------------------------
PY_VALID = {
    'pingpong.py': (['--sizes', '1:4096', '--iters', '20', '--warmup', '2'], 13, 2 * 22 * 13),
    'comms2.py': (['--sizes', '8,64,1k', '--iters', '20', '--warmup', '2'], 3, 2 * 2 * 22 * 3),
}
PY_CASES = [(s, p, path) for s in PY_STACKS for p in PY_VALID for path in ('buffer', 'pickle')]
NO_PY_STACK = 'no MPICH or Open MPI stack with a C wrapper on this machine'
needs_py_stacks = pytest.mark.skipif(not PY_STACKS and not CI, reason=NO_PY_STACK)


def test_python_has_a_stack():
    if not PY_STACKS:
        missing(NO_PY_STACK)


@needs_py_stacks
@pytest.mark.parametrize('stack,script,path', PY_CASES,
                         ids=[f'{s.name}-{p}-{path}' for s, p, path in PY_CASES])
def test_python_valid_run(mpi4py_dirs, stack, script, path):
    args, ndata, validated = PY_VALID[script]
    done = py_run(stack, mpi4py_dirs(stack), 2, script, *args, '--path', path)
    assert done.returncode == 0, done.stderr
    out = kernel_records.parse(done.stdout)
    meta = out['META'][0]
    assert (meta['kernel'], meta['lang'], meta['ranks']) == (script[:-3], 'python', 2)
    assert meta['path'] == path and meta['batches'] == 10
    assert stack.mpi.version in meta['mpi']     # mpi4py was built against this stack
    assert len(out['DATA']) == ndata
    assert all(float(v) > 0 for r in out['DATA'] for k, v in r.items() if k.endswith('_us'))
    assert out['RESULT'][0]['first_message_us'] > 0
    assert out['PASS'] == [{'validated': validated}]


PY_BAD = [
    ('pingpong.py', ['--sizes', 'abc'], 2, 'byte count'),
    ('pingpong.py', ['--path', 'shm'], 2, 'shm'),
    ('pingpong.py', ['--iters', '3', '--batches', '4'], 2, '--batches'),
    ('pingpong.py', [], 1, '2 ranks'),   # 3 ranks would oversubscribe 2 cores
    ('comms2.py', ['--warmup'], 2, 'needs a value'),
]


@needs_py_stacks
@pytest.mark.parametrize('stack', PY_STACKS, ids=[s.name for s in PY_STACKS])
def test_python_bad_input_exits_2_with_one_error_line(mpi4py_dirs, stack):
    for script, args, ranks, mentions in PY_BAD:
        done = py_run(stack, mpi4py_dirs(stack), ranks, script, *args, timeout=60)
        assert done.returncode == 2, (script, args, done.returncode, done.stderr)
        assert len(errors_of(done)) == 1, (script, args, done.stderr)
        assert mentions in errors_of(done)[0], (script, args, done.stderr)


@needs_py_stacks
@pytest.mark.parametrize('stack,script,path', PY_CASES,
                         ids=[f'{s.name}-{p}-{path}' for s, p, path in PY_CASES])
def test_python_stale_message_is_caught_in_the_timed_loop(mpi4py_dirs, stack, script, path):
    args, _, _ = PY_VALID[script]
    done = py_run(stack, mpi4py_dirs(stack), 2, script, *args, '--path', path, '--inject-error')
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert len(errors_of(done)) == 1, done.stderr
    assert errors_of(done)[0].startswith('ERROR: validation failed on rank 1: ')
    assert 'iteration 10' in errors_of(done)[0]     # timed iteration 10 of 20, mid-loop
    out = kernel_records.parse(done.stdout)
    assert not out['DATA'] and not out['PASS']


@needs_py_stacks
def test_python_help_exits_0(mpi4py_dirs):
    stack = PY_STACKS[0]
    for script in PY_VALID:
        done = py_run(stack, mpi4py_dirs(stack), 1, script, '--help')
        assert done.returncode == 0 and '--inject-error' in done.stdout, done.stderr


def test_python_payload_checks_without_mpi(monkeypatch):
    """The two checks of the Python kernels: the stamps of every message catch a stale one,
    the whole-payload check of the last catches a byte the stamps do not cover."""
    monkeypatch.syspath_prepend(str(PY_KERNELS))
    payload = importlib.import_module('ccpayload')
    size, sender = 64, 1
    message = bytearray(payload.expected(size, sender, seq=7).tobytes())
    assert payload.ends_ok(message, size, payload.stamp_of(size, sender, 7))
    assert not payload.ends_ok(message, size, payload.stamp_of(size, sender, 8))   # stale
    assert payload.mismatch(message, size, sender, 8, whole=False)[0] == 0
    message[size // 2] ^= 0x5a
    assert payload.ends_ok(message, size, payload.stamp_of(size, sender, 7))
    assert payload.mismatch(message, size, sender, 7, whole=True)[0] == size // 2
    # Byte for byte the C payload (cc_payload.h): pattern at j = 20 and the stamp's low byte.
    assert message[20] == (20 * 13 + 0 + size * 7 + sender * 101 + 1) & 0xff
    assert message[0] == ((7 * 1000003) ^ (size << 1) ^ sender) & 0xff
