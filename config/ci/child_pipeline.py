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
activating the venv), which ReFrame cannot emit. Usage:

    python3 config/ci/child_pipeline.py pipeline.yml child.yml --tag login --before-script 'CMD'
"""

from __future__ import annotations

import argparse
import re
import sys

import yaml

GLOBAL_KEYS = {'cache', 'stages', 'image', 'default', 'variables', 'workflow', 'include'}
RESTORE = re.compile(r'\s--restore-session=\S+')


def is_fixture(name: str, needed: set[str]) -> bool:
    """A fixture's job: another job needs it, or its name is ReFrame's fixture name
    (``<Class>_<8-hex variant hash>``; a test's is ``<Class>`` or ``<Class>_<index>``)."""
    suffix = name.rpartition('_')[2]
    return name in needed or bool(re.fullmatch(r'[0-9a-f]{8}', suffix) and not suffix.isdigit())


def runnable(pipeline: dict, tags=(), before_script=()) -> dict:
    jobs = {k: v for k, v in pipeline.items() if k not in GLOBAL_KEYS}
    needed = {dep for job in jobs.values() for dep in job.get('needs', [])}
    # ReFrame's cache carried the fixtures' stage directories from job to job: not needed.
    out = {k: v for k, v in pipeline.items() if k in GLOBAL_KEYS and k not in ('stages', 'cache')}
    out['stages'] = ['rfm-tests']
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
        job = dict(job, stage='rfm-tests', needs=[])
        job['script'] = [RESTORE.sub('', line) for line in job['script']]
        # The run report (and a failed test's) is kept; GitLab shows the JUnit report.
        artifacts = dict(job.get('artifacts') or {}, when='always')
        artifacts['reports'] = {**artifacts.get('reports', {}), 'junit': f'{name}-report.xml'}
        job['artifacts'] = artifacts
        out[name] = job
    if len(out) == len([k for k in out if k in GLOBAL_KEYS]):
        raise SystemExit('child_pipeline: no test jobs in the pipeline (did reframe select any?)')
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('pipeline', help='the file reframe --ci-generate wrote')
    parser.add_argument('output', help='the child pipeline to trigger')
    parser.add_argument('--tag', action='append', default=[], help="the runner's tags")
    parser.add_argument('--before-script', action='append', default=[],
                        help='a command every job runs first (e.g. activating the venv)')
    args = parser.parse_args(argv)
    with open(args.pipeline, encoding='utf-8') as handle:
        pipeline = yaml.safe_load(handle)
    child = runnable(pipeline, args.tag, args.before_script)
    with open(args.output, 'w', encoding='utf-8') as handle:
        yaml.safe_dump(child, handle, sort_keys=False, width=sys.maxsize)
    tests = len(child) - len([k for k in child if k in GLOBAL_KEYS])
    print(f'child_pipeline: {tests} test jobs written to {args.output}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
