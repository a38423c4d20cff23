"""``config/sites/cray-ex-emulated.yaml`` against an EMULATED Cray programming environment.

The emulation (``tests/cray``: Lmod modulefiles PrgEnv-gnu, PrgEnv-cray, craype, cray-mpich and
craype-like drivers cc/ftn over Debian's MPICH) is for testing, not a Cray. What is real: Lmod
and ReFrame's Lmod backend, ``module load`` in every build and job script, the cc/ftn drivers,
sbatch and srun through the Slurm cluster of ``.ci/slurm-cluster``. The checks are the suite's,
unchanged: PingPong (C, Fortran) and ParkbenchComms (COMMS1, COMMS2) at quick sizes, on both
PrgEnvs.

Needs root, slurm-wlm, munge, iproute2, lmod, clang, gfortran and Debian's MPICH. Under
``CI=true`` a missing prerequisite fails the module; elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from commcheck import paths
from commcheck.site import SiteError, sitefile
from tests.integration.test_slurm import (
    all_cases,
    reframe_env,
    require,
    run_reframe,
    run_report,
    start_cluster,
)

pytestmark = [pytest.mark.integration]

EMULATION = paths.REPO_ROOT / 'tests' / 'cray'
MODULEPATH = EMULATION / 'modulefiles'
SITE_FILE = paths.CONFIG_DIR / 'sites' / 'cray-ex-emulated.yaml'
LMOD_INIT = Path('/etc/profile.d/lmod.sh')     # what the site file's prepare_cmds source
PRGENVS = {'PrgEnv-gnu': 'GNU', 'PrgEnv-cray': 'Clang'}     # -> C compiler CMake identifies
SELECTION = ['-n', 'PingPong%lang=c', '-n', 'PingPong%lang=fortran',
             '-n', 'ParkbenchComms%benchmark=comms1%lang=c',
             '-n', 'ParkbenchComms%benchmark=comms2%lang=c']
CHECKS = ('PingPong %lang=c', 'PingPong %lang=fortran', 'ParkbenchComms %benchmark=comms1 %lang=c',
          'ParkbenchComms %benchmark=comms2 %lang=c')


def lmod_command() -> str | None:
    """LMOD_CMD as Lmod's own init sets it (ReFrame's Lmod backend reads it)."""
    if os.environ.get('LMOD_CMD'):
        return os.environ['LMOD_CMD']
    if not LMOD_INIT.is_file():
        return None
    done = subprocess.run(['bash', '-c', f'. {LMOD_INIT} >/dev/null 2>&1; echo "$LMOD_CMD"'],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None


def emulation_prerequisites() -> str | None:
    if not lmod_command():
        return f'Lmod not found (no LMOD_CMD, no {LMOD_INIT}; Debian: apt-get install lmod)'
    missing = [p for p in ('clang', 'gfortran', 'gcc', 'mpicc.mpich', 'mpifort.mpich')
               if not shutil.which(p)]
    if missing:
        return (f'not installed: {", ".join(missing)} (Debian: apt-get install clang gfortran '
                f'mpich libmpich-dev)')
    return None


def with_lmod(env: dict) -> dict:
    """ReFrame's environment: Lmod's command and the emulated modules (MODULEPATH only: the
    system's module tree is not part of the emulated site)."""
    return dict(env, LMOD_CMD=lmod_command(), MODULEPATH=str(MODULEPATH))


def module_shell(script: str) -> subprocess.CompletedProcess:
    env = with_lmod(dict(os.environ))
    return subprocess.run(['bash', '-c', f'source {LMOD_INIT} && {script}'], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope='module')
def prerequisites():
    require(emulation_prerequisites())
    try:
        return sitefile.load(SITE_FILE)
    except SiteError as err:
        pytest.fail(str(err))


@pytest.mark.parametrize('prgenv,expect_cc,expect_ftn', [('PrgEnv-gnu', 'gcc', 'GNU Fortran'),
                                                         ('PrgEnv-cray', 'clang', 'GNU Fortran')])
def test_emulated_modules_put_the_drivers_on_path(prerequisites, prgenv, expect_cc, expect_ftn):
    """Outside ReFrame: the modules load with Lmod, cc/ftn are the emulation's drivers and
    compile through MPICH's wrappers with the PrgEnv's compilers."""
    done = module_shell(f'module load {prgenv} cray-mpich/8.1.28 && command -v cc ftn && '
                        f'cc -craype-verbose --version && ftn -craype-verbose --version')
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [str(EMULATION / 'bin' / 'cc'), str(EMULATION / 'bin' / 'ftn')]
    assert f'mpicc.mpich -cc={expect_cc} --version' in done.stdout
    assert 'mpifort.mpich -fc=gfortran --version' in done.stdout
    assert expect_ftn in done.stdout
    if expect_cc == 'clang':
        assert 'clang version' in done.stdout


def test_drivers_refuse_without_a_prgenv(prerequisites):
    done = module_shell(f'{EMULATION / "bin" / "cc"} --version')
    assert done.returncode == 1 and 'no PrgEnv module is loaded' in done.stderr


@pytest.fixture(scope='module')
def cluster(request, prerequisites):
    return start_cluster(request)


@pytest.fixture(scope='module')
def session(cluster, tmp_path_factory):
    base = tmp_path_factory.mktemp('rfm-cray')
    env = with_lmod(reframe_env(base, SITE_FILE))
    done = run_reframe(cluster, env, '-r', '--mode', 'quick', *SELECTION)
    return {'done': done, 'env': env}


def test_both_prgenvs_pass(session):
    done = session['done']
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    cases = [tc for tc in all_cases(run_report(session['env'])) if not tc['fixture']]
    passed = {(tc['display_name'], tc['environ']) for tc in cases if tc['result'] == 'pass'}
    assert passed == {(check, prgenv) for check in CHECKS for prgenv in PRGENVS}, cases


def test_builds_loaded_the_modules_and_used_cc_ftn(session):
    """Each PrgEnv's build script loads its modules and configures with cc/ftn; CMake found the
    emulation's drivers and identified the PrgEnv's compilers behind them."""
    builds = [tc for tc in all_cases(run_report(session['env']))
              if tc['display_name'].startswith('KernelsBuild')]
    assert {tc['environ'] for tc in builds} == set(PRGENVS)
    for tc in builds:
        prgenv, out = tc['environ'], Path(tc['outputdir'])
        assert tc['result'] == 'pass', tc.get('fail_reason')
        script = (out / 'rfm_build.sh').read_text()
        assert script.index('source /etc/profile.d/lmod.sh') < \
            script.index(f'module load {prgenv}/8.5.0') < \
            script.index('module load cray-mpich/8.1.28') < script.index('cmake ')
        assert '-DCMAKE_C_COMPILER="cc"' in script and '-DCMAKE_Fortran_COMPILER="ftn"' in script
        log = (out / 'rfm_build.out').read_text()
        assert f'The C compiler identification is {PRGENVS[prgenv]}' in log, prgenv
        assert 'The Fortran compiler identification is GNU' in log
        assert f'Check for working C compiler: {EMULATION / "bin" / "cc"}' in log
        assert f'Check for working Fortran compiler: {EMULATION / "bin" / "ftn"}' in log
        assert 'Lmod has detected' not in (out / 'rfm_build.err').read_text()


def test_jobs_loaded_the_modules_and_ran_with_srun(cluster, session):
    """Every job script loads the PrgEnv and cray-mpich with Lmod, starts the ranks with srun,
    and ran through the queue (a job id slurmctld completed with status 0)."""
    jobs = cluster.batch_jobs()
    cases = [tc for tc in all_cases(run_report(session['env'])) if not tc['fixture']]
    assert cases
    for tc in cases:
        out, prgenv = Path(tc['outputdir']), tc['environ']
        script = (out / 'rfm_job.sh').read_text()
        assert script.index('source /etc/profile.d/lmod.sh') < \
            script.index(f'module load {prgenv}/8.5.0') < \
            script.index('module load cray-mpich/8.1.28') < script.index('srun --mpi=pmi2 ')
        assert tc['scheduler'] == 'squeue' and jobs[tc['jobid']]['exit'] == 0
        stderr = (out / 'rfm_job.err').read_text()
        assert 'Lmod has detected' not in stderr and 'command not found' not in stderr, stderr
        # The emulated cray-mpich is Debian's MPICH: the kernel reports the library it ran.
        assert 'mpi="MPICH Version:' in (out / 'rfm_job.out').read_text()
