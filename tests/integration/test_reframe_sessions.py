"""Real ReFrame sessions of the suite on this machine's stacks (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from commcheck import paths
from tests.conftest import BIN, STACKS, commcheck_cmd, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.integration]

CONFIG = str(paths.CONFIG_DIR / 'local.py')


def reframe(env, *args, timeout=3600):
    cmd = ['reframe', '-C', CONFIG, '-c', str(paths.CHECKS_DIR), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def run_reports(env) -> list[Path]:
    return sorted((Path(env['COMMCHECK_REPORTS']) / 'runs').glob('run-report-*.json'))


def cases(run_report: Path) -> list[dict]:
    return [tc for run in json.loads(run_report.read_text())['runs'] for tc in run['testcases']]


@pytest.fixture(scope='module')
def main_job(tmp_path_factory):
    """The README's main job (`commcheck run`) with an empty references directory.

    Performance gating on a noisy 2-core runner is tested deterministically below; here every
    check must pass its sanity (validation) on every stack and language.
    """
    base = tmp_path_factory.mktemp('mainjob')
    # As `make run` calls it: the venv's commcheck by path, the venv not on PATH.
    path = os.pathsep.join(p for p in os.environ.get('PATH', '').split(os.pathsep)
                           if p != str(BIN))
    env = dict(os.environ, COMMCHECK_STATE=str(base / 'state'),
               COMMCHECK_REPORTS=str(base / 'reports'), RFM_REFERENCE_PREFIX=str(base / 'norefs'),
               PATH=path)
    (base / 'norefs').mkdir()
    done = subprocess.run([commcheck_cmd(), 'run'], env=env, capture_output=True, text=True,
                          timeout=3600)
    return env, done


def passed(ran: list[dict], environ: str, check: str, **params) -> bool:
    return any(tc['environ'] == environ and tc['display_name'].split()[0] == check and
               tc['result'] == 'pass' and all(str(tc.get(k)) == str(v) for k, v in params.items())
               for tc in ran)


def test_main_job_passes_on_every_stack(main_job):
    env, done = main_job
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    ran = [tc for tc in cases(run_reports(env)[-1]) if not tc['fixture']]
    for stack in STACKS:
        langs = ['c', 'fortran'] if stack.has_fortran else ['c']
        for lang in langs:
            assert passed(ran, stack.name, 'PingPong', lang=lang)
            assert passed(ran, stack.name, 'ParkbenchComms', lang=lang, benchmark='comms2')
            assert passed(ran, stack.name, 'DerivedDatatypes', lang=lang, element='double',
                          mode='stride')
        assert passed(ran, stack.name, 'Stencil', variant='shm', ranks=4)
        if stack.has_fortran:
            assert passed(ran, stack.name, 'FortranPointers', variant='cptr')


def test_every_size_reaches_the_perflog(main_job):
    env, _ = main_job
    perflog = Path(env['COMMCHECK_REPORTS']) / 'perflogs' / 'local' / 'default' / 'PingPong.log'
    lines = [l for l in perflog.read_text().splitlines() if '|PingPong %lang=c|' in l]
    assert len(lines) == len(STACKS)
    header = perflog.read_text().splitlines()[0]
    for size in (2 ** k for k in range(21)):
        assert f'latency_{size}B' in header and f'bw_{size}B' in header


def test_checks_without_reference_say_so(main_job):
    env, _ = main_job
    statuses = {tc['reference_status'] for tc in cases(run_reports(env)[-1])
                if not tc['fixture'] and tc['result'] == 'pass'}
    assert statuses and all(s.startswith(('no reference', 'oversubscribed')) for s in statuses)


def test_osu_without_spack_is_skipped_with_reason(main_job):
    from commcheck.spack_env import find_spack
    if find_spack():
        pytest.skip('Spack is present: OSU runs instead')
    env, _ = main_job
    osu = [tc for tc in cases(run_reports(env)[-1]) if tc['display_name'].startswith('OsuPt2Pt')]
    assert osu and all(tc['result'] == 'skip' for tc in osu)
    assert all('need Spack or a site install' in tc['skip_reason'] for tc in osu)


def test_report_shows_seed_tables_beside_measurements(main_job):
    env, _ = main_job
    reports = Path(env['COMMCHECK_REPORTS'])
    text = (reports / 'report.md').read_text()
    assert '| 1048576 | 290.5 |' in text          # seed 001's published 1 MiB round trip
    assert (reports / 'plots' / 'latency.png').stat().st_size > 10_000
    tables = json.loads((reports / 'tables.json').read_text())
    today = tables['pingpong']['seed001_vs_today']['8']
    assert all(v > 0 for k, v in today.items() if k != 'seed001_rtt_us')
    assert (reports / 'results.db').stat().st_size > 0


def test_results_database_keeps_every_session(main_job):
    env, _ = main_job
    uuid = json.loads(run_reports(env)[-1].read_text())['session_info']['uuid']
    done = reframe(dict(env, PATH=f'{BIN}{os.pathsep}{env["PATH"]}'), '--list-stored-sessions')
    assert done.returncode == 0 and uuid in done.stdout


def strict_references(tmp_path: Path, latency_8b_upper: float) -> Path:
    refs = tmp_path / 'refs'
    refs.mkdir(exist_ok=True)
    (refs / 'local.yaml').write_text(
        'PingPong:\n  $index: [$partition, $environ]\n  local:default:\n    ".*":\n'
        f'      latency_8B: [1.0e-6, null, {latency_8b_upper}, us]\n')
    return refs


def test_a_regression_fails_the_run_and_keeps_the_data(isolated_env, tmp_path):
    """A reference no machine can meet: non-zero exit, and the measurements are still logged."""
    isolated_env['RFM_REFERENCE_PREFIX'] = str(strict_references(tmp_path, 0.0))
    done = reframe(isolated_env, '-r', '-n', '^PingPong', '-p', STACKS[0].name,
                   '-S', 'sizes=8,1024', '-S', 'iters=50')
    assert done.returncode != 0
    assert 'failed to meet reference' in done.stdout
    failed = [tc for tc in cases(run_reports(isolated_env)[-1]) if not tc['fixture']]
    assert failed and all(tc['result'] == 'fail' for tc in failed)
    assert all(tc['perfvalues'] for tc in failed)
    perflog = (Path(isolated_env['COMMCHECK_REPORTS']) / 'perflogs' / 'local' / 'default' /
               'PingPong.log').read_text()
    assert perflog.count('|fail|referenced: latency_8B|') == len(failed)


def test_a_met_reference_passes(isolated_env, tmp_path):
    isolated_env['RFM_REFERENCE_PREFIX'] = str(strict_references(tmp_path, 1.0e12))
    done = reframe(isolated_env, '-r', '-n', '^PingPong', '-p', STACKS[0].name,
                   '-S', 'sizes=8,1024', '-S', 'iters=50')
    assert done.returncode == 0, done.stdout[-3000:]


def test_corrupt_reference_file_is_one_clear_error(isolated_env, tmp_path):
    refs = tmp_path / 'refs'
    refs.mkdir()
    (refs / 'local.yaml').write_text('PingPong:\n  $index: [$partition\n  : - ]]\n')
    isolated_env['RFM_REFERENCE_PREFIX'] = str(refs)
    done = reframe(isolated_env, '-r', '-n', '^PingPong', '-p', STACKS[0].name,
                   '-S', 'sizes=8', '-S', 'iters=10')
    assert done.returncode != 0
    assert 'local.yaml' in done.stdout + done.stderr


def test_listing_covers_every_environment(isolated_env):
    done = reframe(isolated_env, '-l')
    assert done.returncode == 0, done.stderr
    for stack in STACKS:
        assert f'+{stack.name}' in done.stdout
    for check in ('PingPong', 'OsuPt2Pt', 'ParkbenchComms', 'DerivedDatatypes', 'Stencil',
                  'FortranPointers'):
        assert f'- {check}' in done.stdout


def test_dry_run_generates_job_scripts_without_running(isolated_env):
    done = reframe(isolated_env, '--dry-run', '-n', '^PingPong')
    assert done.returncode == 0, done.stdout[-2000:]
    scripts = list(Path(isolated_env['COMMCHECK_STATE']).glob('stage/**/PingPong_*/rfm_job.sh'))
    assert scripts
    assert all('mpiexec -n 2' in s.read_text() for s in scripts)


def test_wheel_fallback_runs_c_and_skips_fortran_with_reason(isolated_env):
    """A machine without a system MPI: the PyPI wheels (C only) carry the main job."""
    isolated_env['COMMCHECK_MPI'] = 'wheels'
    setup = subprocess.run([commcheck_cmd(), 'setup-mpi'], env=isolated_env, capture_output=True,
                           text=True, timeout=900)
    assert setup.returncode == 0, setup.stderr
    done = reframe(isolated_env, '-r', '-n', '^PingPong', '-S', 'sizes=8,1024',
                   '-S', 'iters=50')
    assert done.returncode == 0, done.stdout[-3000:]
    ran = [tc for tc in cases(run_reports(isolated_env)[-1]) if not tc['fixture']]
    assert {tc['environ'] for tc in ran} == {'gnu-mpich', 'gnu-openmpi'}
    for tc in ran:
        if tc['lang'] == 'c':
            assert tc['result'] == 'pass'
        else:
            assert tc['result'] == 'skip' and 'no Fortran MPI wrapper' in tc['skip_reason']
