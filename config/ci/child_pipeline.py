#!/usr/bin/env python3
"""Make ReFrame's generated GitLab child pipeline (``reframe --ci-generate``) runnable for a
suite whose tests use fixtures, as commcheck's all do (the kernel builds, the sequential
stencil baseline).

ReFrame writes one job per test *and one per fixture*, the fixtures' jobs in earlier stages,
and every dependent job restores its fixtures from their jobs' run reports. But a fixture
cannot be selected on its own (``reframe -n /<fixture hash>`` runs 0 test cases and writes no
report), so the fixture jobs do nothing and the jobs after them fail restoring a report that
does not exist (ReFrame issue #3344, documented as a limitation in #3664).

This rewrites the pipeline so that every job is a test's job that runs its own fixtures, in
one stage: the fixture jobs are dropped, and so are the ``needs`` and ``--restore-session`` that
pointed at them (and ReFrame's cache of stage directories). A test job then builds the kernels
of the environments it runs on (with the Spack build path an install that is already there is
reused); jobs running at once need state directories of their own (``COMMCHECK_STATE``). With
``--tag`` and ``--before-script`` it also adds a ``default:`` block (the runner's tags, e.g.
activating the venv), which ReFrame cannot emit.

For the shared history store and the gate (docs/ci.md):
- ``--reframe-args 'ARGS'`` appends ARGS to every test job's ``reframe`` command (ReFrame carries
  only ``--mode`` from the generating run to the jobs; e.g. ``--repeat 6 --exec-order random``,
  launches enough for the gate to decide);
- ``--push`` gives every test job an ``after_script`` (the ``--after-script`` lines, then
  ``commcheck push <its run report>``): GitLab runs it whether the job's checks passed or not,
  in a shell of its own, so each job pushes its own session, once;
- ``--gate`` adds the final job, ``commcheck-gate``, in a stage after the tests: it runs whether
  they passed or not, takes their run reports, runs ``config/ci/gate.py`` on them (compare on
  these sessions, the JUnit verdicts, the report), fails only on a regression (exit 1; the
  other non-zero exits are allowed failures, shown as warnings) and keeps its files.

Usage:

    python3 config/ci/child_pipeline.py pipeline.yml child.yml --tag login --before-script 'CMD'
        [--after-script 'CMD'] [--reframe-args='ARGS'] [--push] [--gate]
    python3 config/ci/child_pipeline.py --lines child.yml JOB KEY

The second form prints the lines of a job's ``script``, ``before_script`` or ``after_script``
(the ``default:`` ones where the job has none), one a line: GitHub Actions runs the child
pipeline's jobs from them (config/ci/github-actions.yml).
"""

from __future__ import annotations

import argparse
import re
import sys

import yaml

from commcheck.errors import EXIT_INTERNAL, EXIT_UNDECIDED, EXIT_USAGE

GLOBAL_KEYS = {'cache', 'stages', 'image', 'default', 'variables', 'workflow', 'include'}
RESTORE = re.compile(r'\s--restore-session=\S+')
REPORT_FILE = re.compile(r'\s--report-file=(\S+)')
TESTS_STAGE, GATE_STAGE = 'rfm-tests', 'rfm-gate'
#: The gate job's name, and where it writes (its JUnit verdicts, JSON and report).
GATE_JOB, GATE_DIR = 'commcheck-gate', 'gate'
#: The gate's command: the run reports of the test jobs (GitLab puts their artifacts in the
#: gate job's directory), and any options for compare a site sets in COMMCHECK_GATE_OPTIONS.
GATE_SCRIPT = (f'python config/ci/gate.py --out {GATE_DIR} *-report.json -- '
               '$COMMCHECK_GATE_OPTIONS')
#: commcheck compare's exit codes that do not fail the pipeline: the gate could not run (bad
#: input: no baseline, the store unreachable, a session not in the store), nothing decided, an
#: internal error; GitLab shows the job as a warning. Only 1, a judged regression, fails it.
GATE_ALLOWED = (EXIT_USAGE, EXIT_UNDECIDED, EXIT_INTERNAL)


def is_fixture(name: str, needed: set[str]) -> bool:
    """A fixture's job: another job needs it, or its name is ReFrame's fixture name
    (``<Class>_<8-hex variant hash>``; a test's is ``<Class>`` or ``<Class>_<index>``)."""
    suffix = name.rpartition('_')[2]
    return name in needed or bool(re.fullmatch(r'[0-9a-f]{8}', suffix) and not suffix.isdigit())


def report_of(job: dict) -> str:
    """The run report a job's ``reframe`` command writes (ReFrame names it after the job)."""
    found = REPORT_FILE.search(' ' + ' '.join(job['script']))
    if not found:
        raise SystemExit(f'child_pipeline: a job without --report-file: {job["script"]}')
    return found[1]


def gate_job(tests: list[str]) -> dict:
    """The last job: the gate on the sessions of ``tests`` (their run reports)."""
    return {'stage': GATE_STAGE, 'when': 'always', 'dependencies': list(tests),
            'script': [GATE_SCRIPT], 'allow_failure': {'exit_codes': list(GATE_ALLOWED)},
            'artifacts': {'when': 'always', 'paths': [f'{GATE_DIR}/'],
                          'reports': {'junit': f'{GATE_DIR}/junit.xml'}}}


def runnable(pipeline: dict, tags=(), before_script=(), after_script=(), reframe_args=(),
             push: bool = False, gate: bool = False) -> dict:
    jobs = {k: v for k, v in pipeline.items() if k not in GLOBAL_KEYS}
    needed = {dep for job in jobs.values() for dep in job.get('needs', [])}
    # ReFrame's cache carried the fixtures' stage directories from job to job: not needed.
    out = {k: v for k, v in pipeline.items() if k in GLOBAL_KEYS and k not in ('stages', 'cache')}
    out['stages'] = [TESTS_STAGE, GATE_STAGE] if gate else [TESTS_STAGE]
    defaults = dict(out.get('default') or {})
    if tags:
        defaults['tags'] = list(tags)
    if before_script:
        defaults['before_script'] = list(before_script)
    if defaults:
        out['default'] = defaults
    for name, job in jobs.items():
        if is_fixture(name, needed):
            continue
        job = dict(job, stage=TESTS_STAGE, needs=[])
        job['script'] = [RESTORE.sub('', line) for line in job['script']]
        extra = [a.strip() for a in reframe_args if a.strip()]
        if extra:
            job['script'] = [' '.join([line, *extra]) for line in job['script']]
        if push:
            job['after_script'] = [*after_script, f'commcheck push {report_of(job)}']
        # The run report (and a failed test's) is kept; GitLab shows the JUnit report.
        artifacts = dict(job.get('artifacts') or {}, when='always')
        artifacts['reports'] = {**artifacts.get('reports', {}), 'junit': f'{name}-report.xml'}
        job['artifacts'] = artifacts
        out[name] = job
    tests = [k for k in out if k not in GLOBAL_KEYS]
    if not tests:
        raise SystemExit('child_pipeline: no test jobs in the pipeline (did reframe select any?)')
    if after_script and not push:
        defaults['after_script'] = list(after_script)
        out['default'] = defaults
    if gate:
        out[GATE_JOB] = gate_job(tests)
    return out


def lines(child: dict, name: str, key: str) -> list[str]:
    """A job's ``key`` lines, or the ``default:`` ones where it has none."""
    if name not in child or name in GLOBAL_KEYS:
        raise SystemExit(f'child_pipeline: no job {name!r} in the child pipeline')
    return list(child[name].get(key, (child.get('default') or {}).get(key, [])))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ['--lines']:
        if len(argv) != 4:
            raise SystemExit('usage: child_pipeline.py --lines child.yml JOB KEY')
        with open(argv[1], encoding='utf-8') as handle:
            print('\n'.join(lines(yaml.safe_load(handle), argv[2], argv[3])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('pipeline', help='the file reframe --ci-generate wrote')
    parser.add_argument('output', help='the child pipeline to trigger')
    parser.add_argument('--tag', action='append', default=[], help="the runner's tags")
    parser.add_argument('--before-script', action='append', default=[],
                        help='a command every job runs first (e.g. activating the venv)')
    parser.add_argument('--after-script', action='append', default=[],
                        help='a command every test job runs after its script, in a shell of '
                             'its own (with --push: before the push)')
    parser.add_argument('--reframe-args', action='append', default=[],
                        help="options appended to every test job's reframe command (e.g. "
                             "'--repeat 6 --exec-order random')")
    parser.add_argument('--push', action='store_true',
                        help='every test job pushes its session (its run report) to the shared '
                             'history store in its after_script')
    parser.add_argument('--gate', action='store_true',
                        help=f'add the final job {GATE_JOB}: commcheck compare on the sessions '
                             f'of the test jobs, JUnit verdicts, the report')
    args = parser.parse_args(argv)
    with open(args.pipeline, encoding='utf-8') as handle:
        pipeline = yaml.safe_load(handle)
    child = runnable(pipeline, args.tag, args.before_script, args.after_script,
                     args.reframe_args, args.push, args.gate)
    with open(args.output, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(child, handle, sort_keys=False, width=sys.maxsize)
    tests = len([k for k in child if k not in GLOBAL_KEYS and k != GATE_JOB])
    gate = f' and the gate job {GATE_JOB}' if args.gate else ''
    print(f'child_pipeline: {tests} test jobs{gate} written to {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
