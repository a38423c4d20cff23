"""Large, realistic histories made from one real session, for ``commcheck bench history`` and
the tests: nothing of megabytes is committed, the history is made when needed.

One real run report is replicated into N nightly sessions one day apart, each with a new uuid,
every test case ``repeat`` times (as ``reframe --repeat`` names them; ``widen`` makes the suite
that many times larger with distinct copies of each test), its performance values moved by a
realistic noise model:

- per session and variable, a machine-state factor (lognormal, ``session_noise``);
- per launch, a launch factor (lognormal, ``launch_noise``) and, for ``tail`` of the launches,
  a slower launch (up to ``tail_size`` worse: placement, a busy neighbour);
- per variable, a slow drift over the history (up to ``drift`` in either direction).

And a few planted change points (:class:`Change`): from session ``at`` on, every variable of
one environment that has a direction gets worse by ``factor`` and a provenance field changes
(``mpi_version 4.0.2 -> 4.1.6``), as an upgrade would. The sessions are written into a ReFrame
results database with ReFrame's own schema (version 1.0 of its ``sessions``/``testcases``
tables and indexes), so ``reframe --list-stored-sessions`` and ``--performance-compare`` read it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import random
import sqlite3
import uuid as uuidlib
from datetime import datetime, timezone
from pathlib import Path

from commcheck import experiments
from commcheck.results.store import REPEAT, RFM_SCHEMA

DAY = 86400.0
@dataclasses.dataclass(frozen=True)
class Change:
    """A planted change point: from session ``at`` on, ``environ`` is ``factor`` worse."""
    at: int
    environ: str
    field: str
    before: str
    after: str
    factor: float = 1.4


@dataclasses.dataclass(frozen=True)
class Noise:
    session_noise: float = 0.03     #: sigma of the log of the per-session factor
    launch_noise: float = 0.03      #: sigma of the log of the per-launch factor
    tail: float = 0.01              #: fraction of launches that are slower
    tail_size: float = 0.15         #: how much slower at most (below the gate's 20 %)
    drift: float = 0.04             #: largest slow drift over the whole history


def default_changes(n: int, environs: list[str]) -> list[Change]:
    """Two upgrades at 200/365 and 300/365 of the history: the MPI of the first environment,
    the UCX transports of the last one (the same one if there is only one)."""
    first, last = environs[0], environs[-1]
    return [Change(at=round(n * 200 / 365), environ=first, field='mpi_version',
                   before='', after='9.9.1', factor=1.4),
            Change(at=round(n * 300 / 365), environ=last, field='env.UCX_TLS',
                   before='sm,self', after='tcp,self', factor=1.5)]


def source_report(path: str | Path) -> dict:
    """A run report (``.json`` or ``.json.gz``) to replicate."""
    import gzip
    path = Path(path)
    opener = gzip.open if path.suffix == '.gz' else open
    with opener(path, 'rt', encoding='utf-8') as f:
        return json.load(f)


def templates(report: dict) -> list[dict]:
    """One test case per test (repeats of the source folded), fixtures included, in order."""
    seen, out = set(), []
    for run in report['runs'][:1]:
        for case in run['testcases']:
            name = (REPEAT.sub('', case['display_name']), case.get('system'),
                    case.get('partition'), case.get('environ'))
            if name not in seen:
                seen.add(name)
                out.append(case)
    return out


def widened(cases: list[dict], widen: int) -> list[dict]:
    """A suite ``widen`` times larger: each performance test as ``%copy=0..widen-1`` (a
    site's suite has more tests than one quick run; the copies are distinct tests)."""
    if widen == 1:
        return cases
    out = []
    for case in cases:
        if not case.get('perfvalues') or case.get('fixture'):
            out.append(case)
            continue
        base = REPEAT.sub('', case['display_name'])
        out.extend({**case, 'display_name': f'{base} %copy={w}',
                    'unique_name': f"{case.get('unique_name') or base}_c{w}"}
                   for w in range(widen))
    return out


def environs(report: dict) -> list[str]:
    return sorted({c['environ'] for c in templates(report) if c.get('perfvalues')})


class Generator:
    def __init__(self, report: dict, n: int, *, repeat: int = 1, widen: int = 1,
                 changes=None, noise: Noise = Noise(), seed: int = 0,
                 start: float | None = None, cluster: str | None = None):
        self.report, self.n, self.repeat, self.noise = report, n, repeat, noise
        #: the ReFrame system the sessions ran on (default: the source session's), its login
        #: node ``<cluster>-login`` the host: histories of several clusters in one store
        self.cluster = cluster
        self.cases = widened(templates(report), widen)
        self.changes = default_changes(n, environs(report)) if changes is None else changes
        self.rng = random.Random(seed)
        self.t0 = start if start is not None else report['session_info']['time_start_unix']
        self.src_t0 = report['session_info']['time_start_unix']
        self.slopes: dict[tuple, float] = {}

    def session(self, i: int) -> dict:
        rng, start = self.rng, self.t0 + i * DAY
        sid = str(uuidlib.UUID(int=rng.getrandbits(128), version=4))
        info = {**self.report['session_info'], 'uuid': sid, 'time_start_unix': start,
                'time_start': _stamp(start)}
        if self.cluster:
            info['hostname'] = f'{self.cluster}-login'
        elapsed = float(info.get('time_elapsed') or 600.0) * self.repeat
        info.update(time_end_unix=start + elapsed, time_end=_stamp(start + elapsed),
                    time_elapsed=elapsed)
        shared = {}
        cases = []
        for tmpl in self.cases:
            copies = self.repeat if tmpl.get('perfvalues') and not tmpl.get('fixture') else 1
            for r in range(copies):
                cases.append(self._case(tmpl, i, r, copies, sid, start, len(cases), shared))
        info.update(num_cases=len(cases), num_failures=0, num_aborted=0, num_skipped=0)
        return {**{k: v for k, v in self.report.items() if k not in ('session_info', 'runs')},
                'session_info': info,
                'runs': [{**self.report['runs'][0], 'testcases': cases,
                          'num_cases': len(cases), 'num_failures': 0}]}

    def _case(self, tmpl: dict, i: int, r: int, copies: int, sid: str, start: float,
              index: int, shared: dict) -> dict:
        case = copy.copy(tmpl)
        base = REPEAT.sub('', tmpl['display_name'])
        if copies > 1 or REPEAT.search(tmpl['display_name']):
            case['display_name'] = f'{base} %.repeat_no={r}'
            case['unique_name'] = f"{tmpl.get('unique_name') or base}_r{r}"
            case['name'] = case['display_name']
        case['uuid'], case['session_uuid'] = f'{sid}:0:{index}', sid
        if self.cluster:
            case['system'] = self.cluster
        done = tmpl.get('job_completion_time_unix')
        if isinstance(done, (int, float)):
            case['job_completion_time_unix'] = start + (done - self.src_t0) * copies + r
            case['job_completion_time'] = _stamp(case['job_completion_time_unix'])
        prov = dict(tmpl.get('provenance') or {})
        worse = 1.0
        for change in self.changes:
            if tmpl.get('environ') == change.environ:
                now = i >= change.at
                prov[change.field] = change.after if now else (
                    prov.get(change.field) or change.before)
                worse *= change.factor if now else 1.0
        if tmpl.get('provenance') is not None or prov:
            case['provenance'] = prov
        if tmpl.get('perfvalues'):
            case['perfvalues'] = {name: self._value(tmpl, name, entry, i, worse, shared)
                                  for name, entry in tmpl['perfvalues'].items()}
        return case

    def _value(self, tmpl: dict, name: str, entry, i: int, worse: float, shared: dict):
        if not (isinstance(entry, list) and entry and isinstance(entry[0], (int, float))
                and math.isfinite(entry[0]) and entry[0] > 0):
            return entry
        rng, noise = self.rng, self.noise
        check, variable = experiments.check_of(tmpl['display_name']), name.split(':')[-1]
        key = (REPEAT.sub('', tmpl['display_name']), tmpl.get('environ'), name)
        way = experiments.direction(check, variable, str(entry[4] if len(entry) > 4 else ''))
        if key not in shared:               # one machine state per session and variable
            shared[key] = rng.lognormvariate(0, noise.session_noise)
        slope = self.slopes.setdefault(key, rng.uniform(-noise.drift, noise.drift))
        factor = shared[key] * rng.lognormvariate(0, noise.launch_noise) * \
            (1 + slope * i / max(1, self.n - 1))
        if rng.random() < noise.tail:
            factor *= 1 + rng.uniform(0, noise.tail_size)
        slower = factor * (worse if way else 1.0)
        value = entry[0] * (slower if way != experiments.HIGHER_IS_BETTER else 1 / slower)
        return [value, *entry[1:]]


def _stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).strftime('%Y%m%dT%H%M%S%z')


def write_db(path: Path, sessions) -> int:
    """Store the sessions as ReFrame does (one transaction per session); returns how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    conn = sqlite3.connect(path)
    count = 0
    try:
        if fresh:
            with conn:
                for statement in RFM_SCHEMA:
                    conn.execute(statement)
        for report in sessions:
            info = report['session_info']
            with conn:
                conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                             (info['uuid'], info['time_start_unix'], info['time_end_unix'],
                              json.dumps(report), None))
                conn.executemany('INSERT INTO testcases VALUES (?, ?, ?, ?, ?, ?, ?)', [
                    (c['name'], c['system'], c['partition'], c['environ'],
                     c.get('job_completion_time_unix'), info['uuid'], c['uuid'])
                    for run in report['runs'] for c in run['testcases']])
            count += 1
    finally:
        conn.close()
    return count


def generate(report: dict, n: int, out: Path, **options) -> Generator:
    """Write a history of ``n`` sessions made from ``report`` into the results database
    ``out`` (created); returns the generator (its ``changes`` are what was planted)."""
    gen = Generator(report, n, **options)
    write_db(Path(out), (gen.session(i) for i in range(n)))
    return gen
