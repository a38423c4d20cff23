"""Real ReFrame sessions of the suite on this machine's stacks (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from commcheck import experiments, paths
from commcheck.results import store
from tests.conftest import ALL_STACKS, BIN, STACKS, commcheck_cmd, needs_stacks

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
    """The README's main job (`commcheck run`), in its quick mode, with no references.

    Every check on every environment of this machine (all the stacks discovery finds: the
    Debian MPICH and Open MPI, the PyPI MPICH 5, Open MPI 5 and Intel MPI wheels, clang, MPJ
    Express), and every language each declares. Performance gating on a noisy 2-core runner is
    tested on purpose elsewhere; here every check must pass its sanity (validation).
    """
    base = tmp_path_factory.mktemp('mainjob')
    # As `make run` calls it: the venv's commcheck by path, the venv not on PATH.
    path = os.pathsep.join(p for p in os.environ.get('PATH', '').split(os.pathsep)
                           if p != str(BIN))
    env = dict(os.environ, COMMCHECK_STATE=str(base / 'state'),
               COMMCHECK_REPORTS=str(base / 'reports'), RFM_REFERENCE_PREFIX=str(base / 'norefs'),
               PATH=path, COMMCHECK_MAX_JOBS='2')
    (base / 'norefs').mkdir()
    done = subprocess.run([commcheck_cmd(), 'run', '--', '--mode', 'quick'], env=env,
                          capture_output=True, text=True, timeout=3600)
    return env, done


def passed(ran: list[dict], environ: str, check: str, **params) -> bool:
    return any(tc['environ'] == environ and tc['display_name'].split()[0] == check and
               tc['result'] == 'pass' and all(str(tc.get(k)) == str(v) for k, v in params.items())
               for tc in ran)


def test_main_job_passes_on_every_stack_and_language(main_job):
    env, done = main_job
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    ran = [tc for tc in cases(run_reports(env)[-1]) if not tc['fixture']]
    assert len({tc['environ'] for tc in ran}) == len(ALL_STACKS) >= 6
    for stack in ALL_STACKS:
        for lang in stack.tested_languages:
            variants = [v for v, language in experiments.LANGUAGES.items()
                        if language.feature == lang]
            for variant in variants:
                assert passed(ran, stack.name, 'PingPong', lang=variant), (stack.name, variant)
                assert passed(ran, stack.name, 'ParkbenchComms', lang=variant, benchmark='comms2')
            if lang in experiments.KERNELS['dtype']:
                assert passed(ran, stack.name, 'DerivedDatatypes', lang=lang, element='double',
                              mode='stride')
        if 'c' in stack.tested_languages:
            assert passed(ran, stack.name, 'Stencil', variant='shm', ranks=4)
        if 'fortran' in stack.tested_languages:
            assert passed(ran, stack.name, 'FortranPointers', variant='cptr')
    assert all(tc['result'] in ('pass', 'skip') for tc in ran)


def test_languages_an_environment_lacks_are_not_selected(main_job):
    env, _ = main_job
    ran = [tc for tc in cases(run_reports(env)[-1]) if not tc['fixture']]
    for stack in ALL_STACKS:
        langs = {tc['lang'] for tc in ran if tc['environ'] == stack.name and tc.get('lang')}
        allowed = {v for v, language in experiments.LANGUAGES.items() if language.feature in
                   stack.tested_languages}
        assert langs <= allowed, (stack.name, langs - allowed)


def test_every_performance_value_has_a_unit(main_job):
    """As ReFrame's report prints them: a count or a share names what it counts or what it is
    a share of (experiments.UNITS: the CPU wait's is 'of wall time')."""
    env, _ = main_job
    values = {(tc['display_name'].split()[0], name.split(':')[-1]): entry[4]
              for tc in cases(run_reports(env)[-1]) for name, entry in
              (tc.get('perfvalues') or {}).items()}
    assert len(values) > 50 and ('PingPong', experiments.CPU_WAIT) in values
    assert [key for key, unit in values.items() if not unit] == []
    assert values['PingPong', experiments.CPU_WAIT] == 'of wall time'


def test_every_size_reaches_the_perflog(main_job):
    env, _ = main_job
    perflog = Path(env['COMMCHECK_REPORTS']) / 'perflogs' / 'local' / 'default' / 'PingPong.log'
    samples = store.read_perflog(perflog, warn=pytest.fail)
    for stack in STACKS:
        names = {s.variable for s in samples if s.environ == stack.name and
                 s.test == 'PingPong %lang=c'}
        assert names >= {f'{m}_{2 ** k}B' for m in ('latency', 'bw') for k in range(21)}


def test_checks_without_reference_say_so(main_job):
    env, _ = main_job
    statuses = {tc['reference_status'] for tc in cases(run_reports(env)[-1])
                if not tc['fixture'] and tc['result'] == 'pass'}
    assert statuses and all(s.startswith(('no reference', 'oversubscribed')) for s in statuses)


def test_osu_without_spack_is_not_selected_and_said(main_job):
    from commcheck.site.rfmconfig import features
    if any('osu' in features(stack) for stack in STACKS):
        pytest.skip('Spack or an OSU install is present: OSU runs instead')
    env, done = main_job
    assert not [tc for tc in cases(run_reports(env)[-1])
                if tc['display_name'].startswith('OsuPt2Pt')]
    assert 'commcheck: OsuPt2Pt: not selected on any environment: needs +osu' in done.stdout


def test_report_shows_seed_tables_beside_measurements(main_job):
    env, done = main_job
    reports = Path(env['COMMCHECK_REPORTS'])
    index = Path(done.stdout.strip().splitlines()[-1])       # the run's last line: the page
    assert index.name == 'index.html' and index.parent.parent == reports
    data = json.loads((index.parent / 'data.json').read_text())
    assert data['sections']['verdict']['matches_reframe']
    seed001 = data['sections']['seeds']['seed001']
    mib = next(r for r in seed001['rows'] if r['size'] == 1048576)
    assert mib['published'] == 290.47                       # seed 001's 1 MiB round trip
    assert mib['today'] and all(v > 0 for v in mib['today'])
    assert (index.parent / 'plots' / 'sweeps.png').stat().st_size > 10_000
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
               'PingPong.log')
    logged = [s for s in store.read_perflog(perflog, warn=pytest.fail)
              if s.variable == 'latency_8B']
    assert len(logged) == len(failed) and all(s.result == 'fail' for s in logged)


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
    from commcheck.site.rfmconfig import features
    osu = any('osu' in features(stack) for stack in STACKS)
    for check in ('PingPong', 'ParkbenchComms', 'DerivedDatatypes', 'Stencil',
                  'FortranPointers') + (('OsuPt2Pt',) if osu else ()):
        assert f'- {check}' in done.stdout
    assert ('- OsuPt2Pt' in done.stdout) == osu


def test_dry_run_generates_job_scripts_without_running(isolated_env):
    done = reframe(isolated_env, '--dry-run', '-n', '^PingPong')
    assert done.returncode == 0, done.stdout[-2000:]
    for stack in STACKS:
        scripts = list(Path(isolated_env['COMMCHECK_STATE']).glob(
            f'stage/**/{stack.name}/PingPong_*/rfm_job.sh'))
        assert scripts, stack.name
        assert all(f'{stack.mpi.launcher_command} -n 2 ' in s.read_text() for s in scripts)


def test_listing_and_loading_write_nothing(isolated_env, tmp_path):
    isolated_env['COMMCHECK_BUILD'] = 'spack'       # even the Spack path: nothing until a run
    isolated_env['SPACK_ROOT'] = str(tmp_path / 'no-spack-here')
    done = reframe(isolated_env, '-l')
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not Path(isolated_env['COMMCHECK_STATE']).exists()


@pytest.mark.skipif(len(STACKS) < 2, reason='needs two compiled stacks')
def test_builds_end_before_the_first_measurement_and_measurements_run_alone(isolated_env,
                                                                           tmp_path):
    """Plain ReFrame on the local site, default settings: every build (one KernelsBuild
    fixture per environment, which ReFrame would otherwise start at once) ends before the first
    measurement job starts, no two measurement jobs overlap, and every result records that
    its node was exclusive. Times are the jobs' own (run report; the builds print theirs)."""
    isolated_env.pop('COMMCHECK_MAX_JOBS', None)
    (tmp_path / 'norefs').mkdir()
    isolated_env['RFM_REFERENCE_PREFIX'] = str(tmp_path / 'norefs')   # not gated: mechanics only
    done = reframe(isolated_env, '-r', '-n', 'PingPong%lang=c', '--mode', 'quick',
                   '-p', STACKS[0].name, '-p', STACKS[1].name)
    assert done.returncode == 0, done.stdout[-3000:]
    ran = cases(run_reports(isolated_env)[-1])
    builds = [tc for tc in ran if tc['fixture'] and tc['name'].startswith('KernelsBuild')]
    measured = sorted((tc['job_submit_time'], tc['job_completion_time_unix']) for tc in ran
                       if not tc['fixture'])
    assert len(builds) >= 2 and len(measured) >= 2
    assert all(0 < b['build_started'] < b['build_ended'] for b in builds), builds
    assert max(b['build_ended'] for b in builds) <= measured[0][0]
    spans = sorted([(b['build_started'], b['build_ended']) for b in builds] + measured)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:])), spans
    assert all(tc['provenance']['node_exclusive'] == 'yes' for tc in ran if not tc['fixture'])


@pytest.mark.skipif(not os.path.exists('/usr/bin/mpicc.mpich'), reason="no Debian MPICH")
def test_a_launch_with_another_library_than_declared_fails_in_one_line(isolated_env, tmp_path):
    """A stack declared as MPICH 4.1.9 whose wrappers are Debian's MPICH (4.0.2): the test
    fails in sanity, its reason one line naming both, and nothing reaches the perflog under
    the wrong label."""
    site = tmp_path / 'mislabelled.yaml'
    site.write_text(
        'name: mislabelled\nhostnames: [".*"]\n'
        'partitions:\n  - {name: default, cores: 2, oversubscribe: true}\n'
        'stacks:\n  - compiler: {family: gnu, version: 12.2.0}\n'
        '    mpi: {flavour: mpich, version: 4.1.9, cc: /usr/bin/mpicc.mpich,\n'
        '          fc: /usr/bin/mpif90.mpich, launcher: /usr/bin/mpiexec.mpich}\n'
        '    languages: [c]\n')
    env = dict(isolated_env, COMMCHECK_SITE=str(site))
    cmd = ['reframe', '-C', str(paths.CONFIG_DIR / 'site.py'), '-c', str(paths.CHECKS_DIR),
           '-r', '-n', 'PingPong%lang=c', '--mode', 'quick']
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode != 0, done.stdout[-3000:]
    measured = [tc for tc in cases(run_reports(env)[-1]) if not tc['fixture']]
    assert measured and all(tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
                            for tc in measured)
    reason = measured[0]['fail_reason']
    assert ('label mismatch: gnu-mpich declares MPICH 4.1.9, but the kernel ran with MPICH '
            '4.0.2') in reason and '\n' not in reason.strip()
    logged = [line.split('|') for p in (Path(env['COMMCHECK_REPORTS']) / 'perflogs').glob(
        '**/PingPong.log') for line in p.read_text().splitlines()[1:]]
    assert all(fields[12] == 'null' for fields in logged), logged     # perf_value
