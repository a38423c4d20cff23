"""``reframe --ci-generate``: the GitLab child pipeline a site's login-node runner triggers
(``config/ci/gitlab-ci.yml``; ``config/ci/github-actions.yml`` runs the same jobs).

ReFrame writes one job per test and one per fixture; each runs ``reframe -n /<hash>``, i.e. that
test on every partition and environment it is valid for. A fixture cannot be selected on its
own (ReFrame issue #3344), so ``config/ci/child_pipeline.py`` drops the fixture jobs and lets
every test job run its own fixtures. The pipeline then covers a (check, environment) exactly
when the hash of that test case, as ``reframe -lC`` lists it, is one of the jobs'. Both are
generated for the local site here, and the jobs of a small pipeline are run as the runner
would run them: the ``default:`` before_script, then the job's script.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from commcheck import experiments, paths
from commcheck.site import sitefile
from commcheck.site.rfmconfig import features
from tests.conftest import BIN, SITE, STACKS, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.integration]

CHILD_PIPELINE = paths.CONFIG_DIR / 'ci' / 'child_pipeline.py'
CASE = re.compile(r'^(?P<indent>\s*)(?P<kind>- |\^)(?P<name>\S+)\s.*?/(?P<hash>[0-9a-f]{8}) '
                  r'@(?P<system>[^:]+):(?P<part>\S+)\+(?P<env>\S+)$', re.M)
SELECT = re.compile(r' -n /(?P<hash>[0-9a-f]{8}) ')
GLOBAL_KEYS = ('cache', 'stages', 'image', 'default', 'variables')


def reframe(env: dict, *args: str, cwd: Path | None = None, timeout: int = 600):
    cmd = [str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'site.py'),
           '-c', str(paths.CHECKS_DIR), *args]
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def jobs_of(pipeline: dict) -> dict[str, dict]:
    return {name: job for name, job in pipeline.items() if name not in GLOBAL_KEYS}


def generate(env: dict, project: Path, *selection: str, options=()) -> tuple[dict, dict]:
    """ReFrame's pipeline and the child pipeline made runnable from it, as the parent job
    makes them (``options``: more of child_pipeline.py's)."""
    raw = project / 'pipeline.yml'
    done = reframe(env, '--mode', 'quick', *selection, f'--ci-generate={raw}', cwd=project)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    child = project / 'child.yml'
    fixed = subprocess.run([sys.executable, str(CHILD_PIPELINE), str(raw), str(child),
                            '--tag', 'login', '--before-script',
                            'export COMMCHECK_STATE="$COMMCHECK_CI_STATE/$CI_JOB_ID"', *options],
                           capture_output=True, text=True, timeout=60)
    assert fixed.returncode == 0, fixed.stderr
    return yaml.safe_load(raw.read_text()), yaml.safe_load(child.read_text())


def test_pipeline_covers_every_check_and_environment(isolated_env, tmp_path):
    env = dict(isolated_env, COMMCHECK_SITE='local')
    raw, child = generate(env, tmp_path)
    listed = reframe(env, '--mode', 'quick', '-lC')
    assert listed.returncode == 0, listed.stderr
    cases = [m.groupdict() for m in CASE.finditer(listed.stdout)]
    tests = [c for c in cases if c['kind'] == '- ']
    fixtures = [c for c in cases if c['kind'] == '^']
    assert tests and fixtures, listed.stdout[-2000:]

    # ReFrame's own pipeline: a job per test and per fixture, fixtures in earlier stages.
    raw_jobs = jobs_of(raw)
    raw_selected = {SELECT.search(job['script'][0])['hash'] for job in raw_jobs.values()}
    assert {c['hash'] for c in cases} == raw_selected
    assert len(raw['stages']) > 1

    # The child pipeline: one stage, a job per test, each selecting one test and nothing else.
    jobs = jobs_of(child)
    assert child['stages'] == ['rfm-tests'] and 'cache' not in child
    assert child['default']['tags'] == ['login']
    selected = {}
    for name, job in jobs.items():
        (script,) = job['script']
        assert job['stage'] == 'rfm-tests' and job['needs'] == []
        assert script.startswith('reframe ') and script.endswith(' -r --mode=quick')
        assert '--restore-session' not in script
        assert f'--report-file={name}-report.json' in script
        assert job['artifacts']['reports']['junit'] == f'{name}-report.xml'
        selected[SELECT.search(script)['hash']] = name
    assert set(selected) == {c['hash'] for c in tests}

    # Every stack of the site, every check ReFrame lists, every experiment that has an
    # environment here (OSU needs one with OSU: Spack, or a site install or module).
    covered = {(c['name'], c['env']) for c in tests}
    assert {env for _, env in covered} == {s.id for s in SITE.stacks}
    for stack in STACKS:
        assert ('PingPong', stack.name) in covered, stack.name
    expected = {e.check for e in experiments.EXPERIMENTS
                if all(any(f in features(s) for s in SITE.stacks) for f in e.needs)}
    names = {re.sub(r'_\d+$', '', n) for n in jobs}
    assert names == {c['name'] for c in tests}
    assert expected - {'StencilSequential'} <= names
    assert 'StencilSequential' in {c['name'] for c in fixtures}


def test_every_job_pushes_its_session_and_the_gate_ends_the_pipeline(isolated_env, tmp_path):
    """With --push, --gate, --after-script and --reframe-args: each test job pushes its own run
    report in its after_script (GitLab runs it whether the job failed or not), the gate job
    comes last, whatever the tests' outcome, with their run reports, and fails the pipeline
    only on exit 1; --lines gives GitHub the same lines."""
    env = dict(isolated_env, COMMCHECK_SITE='local')
    options = ('--after-script', '. config/ci/pgpass.sh', '--reframe-args=--repeat 6',
               '--reframe-args=', '--push', '--gate')
    _, child = generate(env, tmp_path, '-n', 'PingPong%lang=c', '-n', 'PingPong%lang=fortran',
                        options=options)
    gate = child.pop('commcheck-gate')
    jobs = jobs_of(child)
    assert child['stages'] == ['rfm-tests', 'rfm-gate'] and len(jobs) == 2
    for name, job in jobs.items():
        (script,) = job['script']
        assert script.endswith(' -r --mode=quick --repeat 6')
        assert job['after_script'] == ['. config/ci/pgpass.sh',
                                       f'commcheck push {name}-report.json']
        assert f'{name}-report.json' in job['artifacts']['paths']
        assert job['artifacts']['when'] == 'always'
    assert 'after_script' not in child['default']
    assert gate['stage'] == 'rfm-gate' and gate['when'] == 'always'
    assert gate['dependencies'] == list(jobs)
    assert gate['allow_failure'] == {'exit_codes': [2, 3, 4]}
    assert gate['artifacts']['reports']['junit'] == 'gate/junit.xml'
    assert gate['script'] == ['python config/ci/gate.py --out gate *-report.json -- '
                              '$COMMCHECK_GATE_OPTIONS']
    lines = subprocess.run([sys.executable, str(CHILD_PIPELINE), '--lines',
                            str(tmp_path / 'child.yml'), name, 'after_script'],
                           capture_output=True, text=True, timeout=60)
    assert lines.stdout.splitlines() == job['after_script']


def run_job(child: dict, name: str, project: Path, env: dict) -> subprocess.CompletedProcess:
    """One job as the runner runs it: the default before_script, then the script."""
    lines = [*child.get('default', {}).get('before_script', []), *child[name]['script']]
    return subprocess.run(['bash', '-ec', '\n'.join(lines)], cwd=project, env=env,
                          capture_output=True, text=True, timeout=600)


def test_child_pipeline_jobs_run(isolated_env, tmp_path):
    """A child pipeline of one stack and two checks: every job passes, building its own
    fixtures in a state directory of its own. ReFrame's own pipeline would not run: its
    fixture job selects nothing and writes no report for the others to restore."""
    site = tmp_path / 'one-stack.yaml'
    stack = min(STACKS, key=lambda s: s.has_fortran)        # C only builds fastest
    site.write_text(sitefile.dump(SITE.model_copy(update={'stacks': (stack,)})))
    env = dict(isolated_env, COMMCHECK_SITE=str(site), COMMCHECK_CI_STATE=str(tmp_path / 'ci'))
    project = tmp_path / 'project'
    project.mkdir()
    raw, child = generate(env, project, '-n', 'PingPong%lang=c',
                          '-n', 'ParkbenchComms%benchmark=comms1%lang=c')

    fixture = next(name for name in jobs_of(raw) if name.startswith('KernelsBuild'))
    done = run_job(raw, fixture, project, env)
    assert 'Ran 0/0 test case' in done.stdout          # reframe-hpc/reframe#3344
    assert not (project / f'{fixture}-report.json').exists()

    jobs = jobs_of(child)
    assert {re.sub(r'_\d+$', '', n) for n in jobs} == {'PingPong', 'ParkbenchComms'}
    for number, name in enumerate(jobs):
        done = run_job(child, name, project, dict(env, CI_JOB_ID=str(number)))
        assert done.returncode == 0, f'{name}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}'
        report = yaml.safe_load((project / f'{name}-report.json').read_text())
        cases = [tc for run in report['runs'] for tc in run['testcases']]
        assert {tc['result'] for tc in cases} == {'pass'}, (name, cases)
        assert {tc['display_name'].split()[0] for tc in cases if tc['fixture']} == {'KernelsBuild'}
        assert (tmp_path / 'ci' / str(number) / 'output').is_dir()


def test_ci_examples_run_this_flow():
    """The example pipelines (config/ci) generate with --ci-generate, make the child pipeline
    with child_pipeline.py and run its jobs: GitLab by triggering it, GitHub as a matrix."""
    gitlab = yaml.safe_load((paths.CONFIG_DIR / 'ci' / 'gitlab-ci.yml').read_text())
    script = '\n'.join(gitlab['generate']['script'])
    assert '--ci-generate=pipeline.yml' in script
    assert 'config/ci/child_pipeline.py pipeline.yml child.yml' in script
    assert gitlab['checks']['trigger']['include'] == [{'artifact': 'child.yml',
                                                        'job': 'generate'}]
    assert gitlab['checks']['trigger']['strategy'] == 'depend'
    github = yaml.safe_load((paths.CONFIG_DIR / 'ci' / 'github-actions.yml').read_text())
    steps = '\n'.join(s.get('run', '') for s in github['jobs']['generate']['steps'])
    assert '--ci-generate=pipeline.yml' in steps and 'child_pipeline.py' in steps
    matrix = github['jobs']['checks']['strategy']['matrix']['job']
    assert matrix == '${{ fromJSON(needs.generate.outputs.jobs) }}'
    # Every job pushes its session, and the gate ends the pipeline (docs/ci.md).
    assert '--push --gate' in script and '--push --gate' in steps
    assert "--after-script '. config/ci/pgpass.sh'" in script
    push = next(s for s in github['jobs']['checks']['steps'] if 'after_script' in s.get('run', ''))
    assert push['if'] == 'always()'
    gate = github['jobs']['gate']
    assert gate['needs'] == ['generate', 'checks'] and gate['if'].startswith('always()')
    assert any('commcheck-gate script' in s.get('run', '') for s in gate['steps'])
    assert any(s.get('uses', '').startswith('mikepenz/action-junit-report@') and
               s['with']['report_paths'] == 'gate/junit.xml' for s in gate['steps'])
    # The password is read by config/ci/pgpass.sh alone, never put on a command line.
    runs = [script, *(s.get('run', '') for job in github['jobs'].values() for s in job['steps'])]
    assert not any('PASSWORD' in text for text in runs)
    assert 'COMMCHECK_HISTORY_PASSWORD' in (CHILD_PIPELINE.parent / 'pgpass.sh').read_text()
    assert not (paths.REPO_ROOT / '.github' / 'workflows' / 'github-actions.yml').exists()
