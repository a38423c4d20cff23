"""The Spack build path: the same checks, programs and OSU from each stack's Spack environment.

Runs where Spack is found (SPACK_ROOT or PATH), as a site would have it; elsewhere it is
skipped with the reason. A site without internet sets COMMCHECK_SPACK_MIRROR (a source mirror
holding OSU; `commcheck mirror DIR` makes one).

The first ReFrame session here starts cold: a fresh install tree (its own state directory) and a
fresh Spack cache (SPACK_USER_CACHE_PATH), so Spack indexes its package repository while every
stack's install is about to start: the situation in which one stack used to time out on
Spack's cache lock. The later sessions reuse that state (warm), and each breaks one thing.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from commcheck import paths
from commcheck.site import spack_env
from tests.conftest import BIN, STACKS, needs_stacks


def _spack_or_reason():
    try:
        spack = spack_env.find_spack()
    except spack_env.SpackSetupError as err:
        return None, str(err)
    return spack, 'Spack not found: set SPACK_ROOT or put spack on PATH'


SPACK, WHY_NOT = _spack_or_reason()
SPACK_STACKS = [s for s in STACKS if spack_env.has_spack_environment(s)]
pytestmark = [needs_stacks(), pytest.mark.spack, pytest.mark.integration,
              pytest.mark.skipif(SPACK is None, reason=WHY_NOT)]

# Every stack's kernels and OSU are built; one program of each is run (on a loaded machine the
# full OSU sweep of six stacks, one job at a time, takes most of an hour). Performance is not
# gated here: this is about where the programs come from.
SELECTION = ['-n', 'PingPong%lang=c', '-n', 'OsuPt2Pt%benchmark=osu_bw', '-S',
             'PingPong.sizes=8,1024,1048576', '--skip-performance-check']
TIMEOUT = 5400


def _user_cache(tmp: Path) -> str:
    """A fresh Spack user cache (so a cold repository index), which still sees a package
    repository Spack cloned before (Spack 1.x keeps clones there): nothing is fetched."""
    cache = tmp / 'spack-user-cache'
    cache.mkdir()
    real = Path(os.environ.get('SPACK_USER_CACHE_PATH') or Path.home() / '.spack')
    if (real / 'package_repos').is_dir():
        (cache / 'package_repos').symlink_to(real / 'package_repos')
    return str(cache)


def reframe(env: dict, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'local.py'), '-c',
                           str(paths.CHECKS_DIR), *args],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    return done, time.monotonic() - started


def newest_cases(env: dict) -> list[dict]:
    report = sorted((Path(env['COMMCHECK_REPORTS']) / 'runs').glob('*.json'))[-1]
    return [tc for run in json.loads(report.read_text())['runs'] for tc in run['testcases']]


def env_dir(env: dict, stack) -> Path:
    return Path(env['COMMCHECK_STATE']) / 'spack-env' / 'local' / stack.name


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope='module')
def cold(tmp_path_factory):
    """One cold session over every Spack stack: (environment, result, seconds)."""
    tmp = tmp_path_factory.mktemp('spack-path')
    env = dict(os.environ, COMMCHECK_STATE=str(tmp / 'state'),
               COMMCHECK_REPORTS=str(tmp / 'reports'), COMMCHECK_BUILD='spack',
               SPACK_USER_CACHE_PATH=_user_cache(tmp),
               PATH=f'{BIN}{os.pathsep}{os.environ.get("PATH", "")}')
    env.pop('RFM_REFERENCE_PREFIX', None)
    env.pop('COMMCHECK_SPACK_INSTALL_TREE', None)
    done, seconds = reframe(env, '-r', *SELECTION)
    print(f'cold Spack session: {seconds:.0f} s', file=sys.stderr)
    return env, done, seconds


def test_cold_session_builds_every_stack_and_runs_osu(cold):
    env, done, _ = cold
    assert done.returncode == 0, done.stdout[-4000:]
    cases = newest_cases(env)
    osu = [tc for tc in cases if tc['display_name'].startswith('OsuPt2Pt')]
    assert len(osu) == len(SPACK_STACKS) and all(tc['result'] == 'pass' for tc in osu)
    builds = [tc for tc in cases if tc['display_name'].startswith('KernelsBuild')
              and tc['environ'] in {s.name for s in SPACK_STACKS}]
    assert len(builds) == len(SPACK_STACKS) and all(tc['result'] == 'pass' for tc in builds)
    assert {tc['environ'] for tc in osu} == {s.name for s in SPACK_STACKS}
    assert all('spack-views' in tc['executable'] for tc in cases
               if not tc['fixture'] and tc['display_name'].startswith(('PingPong', 'OsuPt2Pt')))
    assert 'Timed out waiting for a write lock' not in done.stdout


def test_environments_live_in_the_state_directory(cold):
    env, _, _ = cold
    for stack in SPACK_STACKS:
        folder = env_dir(env, stack)
        text = (folder / 'spack.yaml').read_text()
        assert (folder / 'spack.lock').is_file()
        assert f'# Generated by commcheck for stack {stack.name}' in text
        assert env['COMMCHECK_STATE'] in text         # install tree, view, linked prefix


def test_warm_session_reinstalls_nothing_and_keeps_the_locks(cold):
    env, _, cold_seconds = cold
    before = {s.name: (digest(env_dir(env, s) / 'spack.yaml'),
                       digest(env_dir(env, s) / 'spack.lock')) for s in SPACK_STACKS}
    done, seconds = reframe(env, '-r', '-n', 'PingPong%lang=c', '-S', 'PingPong.sizes=8',
                            '--skip-performance-check')
    print(f'warm Spack session (PingPong only): {seconds:.0f} s', file=sys.stderr)
    assert done.returncode == 0, done.stdout[-4000:]
    after = {s.name: (digest(env_dir(env, s) / 'spack.yaml'),
                      digest(env_dir(env, s) / 'spack.lock')) for s in SPACK_STACKS}
    assert after == before
    # Nothing is concretized or fetched again; the kernels are rebuilt (incrementally) only
    # if their sources changed since, as Spack does for a develop spec.
    stage = Path(env['COMMCHECK_STATE']) / 'stage'
    for log in stage.glob('*/*/*/KernelsBuild_*/rfm_build.out'):
        text = log.read_text(errors='replace')
        assert 'Installing osu-micro-benchmarks' not in text and 'Concretized' not in text, log


def _one_stack_session(env: dict, **settings) -> tuple[subprocess.CompletedProcess, list[dict]]:
    stack = SPACK_STACKS[0].name
    done, _ = reframe(dict(env, **settings), '-r', '-p', stack, *SELECTION)
    return done, [tc for tc in newest_cases(env) if tc['environ'] == stack]


def _results(cases: list[dict], prefix: str) -> set[str]:
    return {tc['result'] for tc in cases if tc['display_name'].startswith(prefix)}


def test_a_failed_osu_fetch_leaves_the_other_checks_running(cold):
    """An OSU version nobody has the source of (not in the mirror, no network): OSU fails
    alone; the kernels build and PingPong passes."""
    env, _, _ = cold
    done, cases = _one_stack_session(env, COMMCHECK_OSU_SPEC='osu-micro-benchmarks@7.0.1')
    assert _results(cases, 'KernelsBuild') == {'pass'}
    assert _results(cases, 'PingPong') == {'pass'}
    assert _results(cases, 'OsuPt2Pt') == {'fail'}
    marker = Path(spack_env.osu_failure_marker(str(env_dir(env, SPACK_STACKS[0]))))
    assert 'osu-micro-benchmarks@7.0.1' in marker.read_text()


def test_a_mirror_that_is_not_there_is_one_line(cold, tmp_path):
    env, _, _ = cold
    missing = tmp_path / 'no-mirror'
    done, cases = _one_stack_session(env, COMMCHECK_SPACK_MIRROR=str(missing),
                                     COMMCHECK_OSU_SPEC='osu-micro-benchmarks@7.0.1')
    assert _results(cases, 'PingPong') == {'pass'}
    assert _results(cases, 'OsuPt2Pt') == {'fail'}
    marker = Path(spack_env.osu_failure_marker(str(env_dir(env, SPACK_STACKS[0]))))
    said = marker.read_text()
    assert f'the Spack source mirror {missing} does not exist' in said
    assert 'COMMCHECK_SPACK_MIRROR' in said


def test_a_spack_root_that_is_not_spack_is_one_line(tmp_path):
    env = dict(os.environ, SPACK_ROOT=str(tmp_path), COMMCHECK_STATE=str(tmp_path / 'state'),
               COMMCHECK_REPORTS=str(tmp_path / 'reports'))
    env.pop('COMMCHECK_BUILD', None)
    done, _ = reframe(env, '-l')
    assert done.returncode != 0
    said = [line for line in (done.stdout + done.stderr).splitlines()
            if f'SPACK_ROOT={tmp_path} is not a Spack installation' in line]
    assert said and 'COMMCHECK_BUILD=cmake' in said[0]


def test_spack_without_clingo_says_set_spack_python(tmp_path):
    """SPACK_PYTHON unset, a Python without clingo first on PATH, bootstrapping disabled: not
    Spack's "bootstrapping is currently disabled" but what to set."""
    python = '/usr/bin/python3'
    if not os.path.exists(python) or subprocess.run([python, '-c', 'import clingo'],
                                                    capture_output=True).returncode == 0:
        pytest.skip(f'needs a {python} that cannot import clingo')
    config = tmp_path / 'user-config'
    config.mkdir()
    (config / 'bootstrap.yaml').write_text('bootstrap:\n  enable: false\n')
    environ = {k: v for k, v in os.environ.items() if k != 'SPACK_PYTHON'}
    environ.update(PATH='/usr/bin:/bin', SPACK_USER_CONFIG_PATH=str(config))
    folder = tmp_path / 'env'
    spack_env.write_env(str(folder), 'spack:\n  specs: [zlib]\n')
    with pytest.raises(spack_env.SpackSetupError) as err:
        spack_env.run_spack(SPACK, ['-e', str(folder), 'concretize'], timeout=1800,
                            environ=environ)
    assert 'set SPACK_PYTHON' in str(err.value).splitlines()[0]


def test_mirror_command_collects_what_the_environments_build(tmp_path):
    """`commcheck mirror DIR`: the OSU source lands in
    Spack's layout. Offline, it is read from COMMCHECK_SPACK_MIRROR or Spack's source cache."""
    env = dict(os.environ, COMMCHECK_STATE=str(tmp_path / 'state'), COMMCHECK_BUILD='spack')
    env.pop('COMMCHECK_OSU_SPEC', None)
    done = subprocess.run([str(BIN / 'commcheck'), 'mirror', str(tmp_path / 'mirror')],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    archives = list((tmp_path / 'mirror' / '_source-cache' / 'archive').glob('*/*.tar.gz'))
    assert archives and all(a.name.startswith(a.parent.name) for a in archives)
    assert (tmp_path / 'mirror' / 'osu-micro-benchmarks' /
            'osu-micro-benchmarks-7.3.tar.gz').exists()
    assert 'export COMMCHECK_SPACK_MIRROR=' in done.stdout
