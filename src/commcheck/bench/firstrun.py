"""Benchmark, not a test: the README's first-run figures, with their machine.

A fresh clone of this checkout's ``HEAD`` (or ``--repo``) in a new directory (``--keep``, else
the temporary directory), then ``make run`` in it twice, started as cron starts a job (no
terminal, a session of its own, SIGINT ignored): the first from empty caches (``XDG_CACHE_HOME``
at an empty directory: commcheck's build cache and pip's; the clone's own ``.venv``,
``.state`` and ``reports``), the second at once after it (every build reused). For each run:
the wall time, the exit code, ReFrame's counts, and the longest part: the check class whose test
cases took the longest (the sum of their ``time_total``; the builds are their fixtures'
classes), from the run report that run wrote. Then the machine: date (UTC), CPU model, CPUs,
last-level cache, load before and after. ``--json`` keeps the same as a record.

It takes as long as the two runs (10-20 minutes on a 2-core VM): run it alone on the machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from commcheck import paths
from commcheck.bench import machine
from commcheck.errors import UserError

#: The runs, in order: the first from empty caches, the second with every build reused.
RUNS = ('first', 'second')
#: Settings of the caller's environment a fresh clone must not inherit (they would move its
#: state, reports, caches or references elsewhere).
DROPPED = ('COMMCHECK_', 'RFM_', 'PIP_CACHE_DIR', 'XDG_CACHE_HOME', 'VIRTUAL_ENV')
#: The longest parts a run's line names.
SHOWN_PARTS = 3
#: ReFrame's results that count as passed and as failed.
PASSED, FAILED = ('pass', 'xfail'), ('fail', 'xpass', 'abort')


@dataclasses.dataclass
class Part:
    """A check class's test cases in one run: how many, and their summed ``time_total``."""
    name: str
    cases: int
    seconds: float


@dataclasses.dataclass
class Run:
    """One ``make run``: its wall time and exit code, and what its run report says."""
    label: str
    wall: float
    exit: int
    counts: dict[str, int]
    parts: list[Part]
    report: str


def parts(report: dict) -> list[Part]:
    """The check classes of a run report (a test case's class: its display name's first word),
    longest first."""
    cases: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            name = str(case.get('display_name') or case.get('name') or '?').split()[0]
            cases[name] += 1
            seconds[name] += float(case.get('time_total') or 0.0)
    return sorted((Part(n, cases[n], seconds[n]) for n in cases),
                  key=lambda p: (-p.seconds, p.name))


def counts(report: dict) -> dict[str, int]:
    """The test cases and how many passed, failed and were skipped (a retried case counts
    once, by its last result), as ReFrame's summary counts them."""
    last = {}
    for run in report.get('runs', []):
        for case in run.get('testcases', []):
            key = tuple(str(case.get(k)) for k in ('display_name', 'system', 'partition',
                                                   'environ'))
            last[key] = str(case.get('result'))
    said = list(last.values())
    return {'cases': len(said), 'passed': sum(r in PASSED for r in said),
            'failed': sum(r in FAILED for r in said), 'skipped': said.count('skip')}


def minutes(seconds: float) -> str:
    """``498 s (8 min 18 s)``."""
    whole = round(seconds)
    return f'{whole} s ({whole // 60} min {whole % 60} s)'


def line(run: Run) -> str:
    """One run, as the README states a figure."""
    total = sum(p.seconds for p in run.parts)
    longest = '; '.join(f'{p.name} {p.seconds:.0f} s ({p.cases} test cases)'
                        for p in run.parts[:SHOWN_PARTS])
    c = run.counts
    return (f'{run.label} make run: {minutes(run.wall)}, exit {run.exit}; {c["passed"]} of '
            f'{c["cases"]} passed, {c["failed"]} failed, {c["skipped"]} skipped; longest parts '
            f'(test cases\' time, {total:.0f} s in all): {longest}')


def from_report(label: str, wall: float, code: int, path: Path) -> Run:
    """A :class:`Run` from the run report ``path`` it wrote (ReFrame's JSON)."""
    try:
        report = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, ValueError) as err:
        raise UserError(f'{path}: not a ReFrame run report ({err})') from None
    return Run(label, wall, code, counts(report), parts(report), str(path))


# -- the runs -------------------------------------------------------------------------------
def _git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(['git', *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise UserError(f'git {" ".join(args)}: {" ".join(done.stderr.split()) or "failed"}')
    return done.stdout.strip()


def clean_env(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    env['XDG_CACHE_HOME'] = str(cache)
    return env


def timed(clone: Path, env: dict, label: str) -> Run:
    """``make run`` in ``clone`` as cron starts it; its output in ``<label>-run.log`` beside."""
    log = clone.parent / f'{label}-run.log'
    before = set((clone / 'reports' / 'runs').glob('run-report-*.json'))
    start = time.monotonic()
    with open(log, 'wb') as out:
        code = subprocess.call(['make', 'run'], cwd=clone, env=env, stdin=subprocess.DEVNULL,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    wall = time.monotonic() - start
    written = sorted(set((clone / 'reports' / 'runs').glob('run-report-*.json')) - before,
                     key=lambda p: p.stat().st_mtime)
    if not written:
        raise UserError(f'{label} make run (exit {code}) wrote no run report; see {log}')
    return from_report(label, wall, code, written[-1])


@contextlib.contextmanager
def _workdir(keep: str | None):
    """Where the clone and the runs' logs go: a new directory under ``keep``, kept (and said),
    else a temporary one, removed at the end."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix='commcheck-bench-firstrun-') as tmp:
            yield tmp
        return
    kept = tempfile.mkdtemp(prefix='commcheck-bench-firstrun-', dir=keep)
    yield kept
    print(f'the clone, its run reports and the runs\' logs: {kept}')


def main(args) -> int:
    source = str(args.repo or paths.REPO_ROOT)
    started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    load_before = machine.load()
    with _workdir(args.keep) as tmp:
        clone = Path(tmp) / 'commcheck'
        _git('clone', '--quiet', source, str(clone))
        commit = _git('rev-parse', '--short', 'HEAD', cwd=clone)
        print(f'commcheck bench firstrun: a fresh clone of {source} at {commit}, {started}',
              flush=True)
        env = clean_env(Path(tmp) / 'cache')
        runs = []
        for label in RUNS:
            runs.append(timed(clone, env, label))
            print(line(runs[-1]), flush=True)
        said = {'source': source, 'commit': commit, 'started': started,
                'machine': machine.describe(), 'load': [load_before, machine.load()],
                'runs': [dataclasses.asdict(r) for r in runs]}
        print(f'machine: {said["machine"]}; load before {load_before}, after {said["load"][1]}')
        if args.json:
            Path(args.json).write_text(json.dumps(said, indent=1) + '\n', encoding='utf-8')
    return 0
