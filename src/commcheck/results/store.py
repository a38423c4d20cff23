"""Reading back what was recorded: ReFrame's results database, run reports and perflogs.

Every reader validates what it reads. A file that cannot be read at all raises
:class:`HistoryError` (one line naming the file and the problem); a damaged part of a file that
is otherwise usable (one session, one test case, one perflog line) is skipped with a warning
naming where it is, and the rest is returned. Nothing here writes.

The results database is read selectively (:class:`ResultsDB`): sessions are listed and chosen
from its uuid and start-time columns, and only the chosen sessions' JSON records are decoded.
Series over many sessions come from the derived index, :mod:`commcheck.results.sample_index`.

A *sample* is one performance value of one launch: one test case of one session (``--repeat N``
makes N launches of each test in one session).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple, TypeVar

from commcheck import experiments
from commcheck.errors import UserError
from commcheck.forks import fork_map

Warn = Callable[[str], None]
#: Sessions from which :meth:`ResultsDB.load` decodes in several processes (one record of a
#: year of the suite with ``--repeat 8``: 8.8 MB, a quarter of a second to decode).
PARALLEL_FROM = 4
#: (test, variable, unit) -> whether a reader wants that sample; the others are not made
Wanted = Callable[[str, str, str], bool]
REPEAT = re.compile(r'\s*%\.repeat_no=\d+')
_SHARED: dict[tuple, tuple] = {}    # provenance tuples seen: thousands of samples share each


class HistoryError(UserError):
    """Recorded data that cannot be read; the message names the file and the problem."""


def warn_stderr(message: str) -> None:
    print(f'WARNING: {message}', file=sys.stderr)


class SampleKey(NamedTuple):
    """What a series of samples measures: one variable of one test on one stack. A tuple, so
    equal to (and found in a dict by) the plain 5-tuples stored in JSON and in the index."""
    system: str
    partition: str
    environ: str
    test: str                   # display name without the repeat number
    variable: str

    @property
    def check(self) -> str:
        return experiments.check_of(self.test)

    @property
    def launches(self) -> tuple[str, str, str, str]:
        """What the variables measured by the same launches share: all but the variable."""
        return self[:4]

    def of(self, variable: str) -> SampleKey:
        """The key of another variable of the same launches (a floor, say)."""
        return self._replace(variable=variable)


@dataclasses.dataclass(slots=True, unsafe_hash=True)   # never changed once made; not frozen:
class Sample:                                           # frozen construction is 2x slower
    session: str                # session uuid ('' for perflog samples)
    time: float                 # job completion, unix seconds
    system: str
    partition: str
    environ: str
    test: str                   # display name without the repeat number
    variable: str
    value: float
    unit: str
    result: str                 # the test case's result: pass, fail
    oversubscribed: bool = False
    provenance: tuple[tuple[str, str], ...] = ()

    @property
    def check(self) -> str:
        return experiments.check_of(self.test)

    @property
    def key(self) -> SampleKey:
        return SampleKey(self.system, self.partition, self.environ, self.test, self.variable)

    @property
    def prov(self) -> dict[str, str]:
        return dict(self.provenance)


@dataclasses.dataclass
class Session:
    uuid: str
    time_start: float
    info: dict
    cases: list[dict]           # the last attempt of each test case, as ReFrame recorded it
    samples: list[Sample]

    @property
    def when(self) -> str:
        return str(self.info.get('time_start', ''))


def key_label(key: tuple) -> str:
    system, partition, environ, test, variable = key
    return f'{system}:{partition} {environ} {test} {variable}'


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _exactly_one(want: str, uuids: list[str]) -> None:
    """The uuids that start with ``want`` are exactly one: none or several is an error."""
    if not uuids:
        raise HistoryError(f'no stored session {want!r} '
                           f'(`reframe --list-stored-sessions` lists them)')
    if len(uuids) > 1:
        raise HistoryError(f'session {want!r} is ambiguous: {", ".join(uuids)}')


def job_nodes(case: dict) -> list[str]:
    """The nodes a test case's job ran on, as ReFrame reported them; empty when unknown.

    ReFrame's ``squeue`` backend learns the nodes only while it sees the job in the queue; a
    job that ends between two polls is reported on the node ``None``."""
    return [str(n) for n in case.get('job_nodelist') or [] if n not in (None, 'None', '')]


def interned(provenance: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """A sample's provenance as its sorted tuple, one shared copy for each distinct setup
    (thousands of samples share each: a year of history would hold millions of copies)."""
    items = tuple(sorted(provenance.items()))
    if len(_SHARED) > 100_000:
        _SHARED.clear()
    return _SHARED.setdefault(items, items)


def _case_samples(case: dict, uuid: str, where: str, warn: Warn,
                  wanted: Wanted | None = None) -> list[Sample]:
    perf = case.get('perfvalues') or {}
    if not isinstance(perf, dict):
        warn(f'{where}: perfvalues of {case.get("display_name")!r} is not a mapping; skipped')
        return []
    prov = case.get('provenance')
    prov = prov if isinstance(prov, dict) else {}
    prov = {**{k: str(v) for k, v in prov.items()}, 'nodelist': ','.join(job_nodes(case))}
    provenance = interned(prov)
    out = []
    common = {'session': uuid, 'time': float(case.get('job_completion_time_unix') or 0.0),
              'system': str(case.get('system') or ''),
              'partition': str(case.get('partition') or ''),
              'environ': str(case.get('environ') or ''),
              'test': REPEAT.sub('', str(case.get('display_name'))),
              'result': str(case.get('result')), 'oversubscribed': bool(case.get('oversubscribed')),
              'provenance': provenance}
    for name, entry in perf.items():
        if not (isinstance(entry, list) and len(entry) >= 5 and _finite(entry[0])):
            warn(f'{where}: {case.get("display_name")} {name}: not a finite performance value '
                 f'({entry!r}); skipped')
            continue
        variable = name.split(':')[-1]
        unit = experiments.unit_now(variable, str(entry[4] or ''))
        if wanted is None or wanted(common['test'], variable, unit):
            out.append(Sample(variable=variable, value=float(entry[0]), unit=unit, **common))
    return out


def session_from_report(report, where: str, warn: Warn = warn_stderr,
                        wanted: Wanted | None = None) -> Session:
    """A :class:`Session` from a decoded ReFrame run report; raises HistoryError if it is not
    one, skips (with a warning) test cases that are malformed. Every performance value is
    validated; only those ``wanted`` (all, by default) become samples."""
    if not isinstance(report, dict):
        raise HistoryError(f'{where}: not a ReFrame run report (a {type(report).__name__})')
    info, runs = report.get('session_info'), report.get('runs')
    if not isinstance(info, dict) or not isinstance(runs, list):
        raise HistoryError(f'{where}: not a ReFrame run report (no session_info/runs)')
    uuid = str(info.get('uuid') or '')
    start = info.get('time_start_unix')
    last: dict[tuple, dict] = {}
    for run in runs:
        cases = run.get('testcases') if isinstance(run, dict) else None
        if not isinstance(cases, list):
            warn(f'{where}: a run without a test case list; skipped')
            continue
        for case in cases:
            if not (isinstance(case, dict) and isinstance(case.get('display_name'), str)):
                warn(f'{where}: a malformed test case; skipped')
                continue
            last[(case.get('unique_name') or case['display_name'], case.get('system'),
                  case.get('partition'), case.get('environ'))] = case
    samples = [s for case in last.values() if not case.get('fixture')
               for s in _case_samples(case, uuid, where, warn, wanted)]
    return Session(uuid=uuid, time_start=float(start) if _finite(start) else 0.0, info=info,
                   cases=list(last.values()), samples=samples)


def read_run_report(path: str | Path, warn: Warn = warn_stderr) -> Session:
    path = Path(path)
    try:
        report = json.loads(path.read_text(encoding='utf-8'))
    except FileNotFoundError:
        raise HistoryError(f'{path}: no such run report') from None
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise HistoryError(f'{path}: not a readable ReFrame run report ({err})') from None
    return session_from_report(report, str(path), warn)


# ReFrame 4.x results database, schema 1.0 (reframe/frontend/reporting/storage.py): the same
# tables, columns and indexes, so ReFrame reads and appends to what commcheck writes (generated
# histories, archives).
RFM_SCHEMA = (
    'CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
    'session_end_unix REAL, json_blob TEXT, report_file TEXT)',
    'CREATE TABLE testcases(name TEXT,system TEXT, partition TEXT, environ TEXT, '
    'job_completion_time_unix REAL, session_uuid TEXT, uuid TEXT, '
    'FOREIGN KEY(session_uuid) REFERENCES sessions(uuid) ON DELETE CASCADE)',
    'CREATE INDEX index_testcases_time on testcases(job_completion_time_unix)',
    'CREATE TABLE metadata(schema_version TEXT)',
    'CREATE INDEX index_sessions_time on sessions(session_start_unix)',
    "INSERT INTO metadata VALUES('1.0')",
)


@dataclasses.dataclass(frozen=True)
class Stored:
    """A session as the results database lists it, without its record."""
    uuid: str
    time_start: float           # session_start_unix


#: What a ``with`` block over a :class:`Connected` reader gives: the reader itself.
_Held = TypeVar('_Held', bound='Connected')


class Connected:
    """A reader that holds one connection (``conn``; None before it opens and once closed):
    :meth:`close` ends it, and so does the end of a ``with`` block."""
    conn = None

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            finally:
                self.conn = None

    def __enter__(self: _Held) -> _Held:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Listing:
    """The part of :class:`commcheck.results.history.History` every history implements alike
    (ReFrame's results database here, the shared store in :mod:`commcheck.results.pgread`):
    choosing sessions from a listing and decoding only the chosen ones' records. A history
    gives :meth:`stored`, :meth:`resolve`, :meth:`records` and ``where`` (what names it in a
    message; a URL without its password); the rest of History is declared there."""
    where: str = ''

    def stored(self, since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        raise NotImplementedError

    def resolve(self, want: str) -> Stored:
        raise NotImplementedError

    def records(self, uuids: list[str]) -> Iterable[tuple[str, str]]:
        raise NotImplementedError

    def choose(self, *, uuids: Iterable[str] = (), last: int | None = None,
               since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        """Like :func:`select`, on the listing: by uuid (prefixes), time range, cluster, the
        last N."""
        wanted = list(uuids)
        if wanted:
            chosen = [self.resolve(w) for w in wanted]
            chosen = [s for s in chosen if (since is None or s.time_start >= since)
                      and (until is None or s.time_start <= until)]
            if cluster is not None:
                there = {s.uuid for s in self.stored(since, until, cluster)}
                chosen = [s for s in chosen if s.uuid in there]
        else:
            chosen = self.stored(since, until, cluster)
        if last is not None:
            chosen = chosen[-last:] if last > 0 else []
        return chosen

    def fetcher(self, uuids: list[str]) -> Callable[[str], str | None]:
        """uuid -> its JSON record (None if gone), callable in a forked worker: here each call
        reads its own record through a connection of its own."""
        def fetch(uuid: str) -> str | None:
            for _, blob in self.records([uuid]):
                return blob
            return None
        return fetch

    def load(self, chosen: Iterable[Stored], warn: Warn = warn_stderr,
             cases: bool = True, wanted: Wanted | None = None) -> list[Session]:
        """The chosen sessions decoded, in the order given; an unreadable one is skipped with
        a warning. ``cases=False`` keeps only the samples (the raw test cases are dropped);
        ``wanted`` keeps only the samples it wants (a year of the suite makes 18,000 a
        session, of which a gate judges some 3,500). Samples only, from
        :data:`PARALLEL_FROM` sessions on, are decoded in a process per core."""
        uuids = [s.uuid for s in chosen]
        fetch = self.fetcher(uuids)

        def one(uuid: str) -> tuple[Session | None, list[str]]:
            said: list[str] = []
            blob = fetch(uuid)
            if blob is None:
                return None, said
            session = decode_record(blob, f'{self.where} session {uuid}', said.append, wanted)
            if session is not None and not cases:
                session.cases = []
            return session, said
        parallel = not cases and len(uuids) >= PARALLEL_FROM
        sessions = []
        for session, said in fork_map(one, uuids) if parallel else map(one, uuids):
            for message in said:
                warn(message)
            if session is not None:
                sessions.append(session)
        return sessions


class ResultsDB(Listing):
    """ReFrame's results database, read selectively: sessions are listed from the ``sessions``
    table's uuid and start-time columns (ReFrame indexes the latter) and only the records of the
    sessions asked for are decoded. Every connection is read-only."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.where = str(self.path)
        if not self.path.exists():
            raise HistoryError(f'{self.path}: no results database (run the suite first)')

    def query(self, sql: str, params=()) -> list[tuple]:
        try:
            conn = sqlite3.connect(f'file:{self.path}?mode=ro', uri=True)
            try:
                return conn.execute(sql, params).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as err:
            raise HistoryError(f'{self.path}: not a readable ReFrame results database '
                               f'({err})') from None

    def stored(self, since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        """The sessions started in [since, until] (on ``cluster``, the ReFrame system, when
        given: from ReFrame's test case table), oldest first; no record is decoded."""
        sql, params = 'SELECT uuid, session_start_unix FROM sessions', []
        where = []
        if since is not None:
            where.append('session_start_unix >= ?')
            params.append(since)
        if until is not None:
            where.append('session_start_unix <= ?')
            params.append(until)
        if cluster is not None:
            where.append('uuid IN (SELECT session_uuid FROM testcases WHERE system = ?)')
            params.append(cluster)
        if where:
            sql += ' WHERE ' + ' AND '.join(where)
        rows = self.query(sql + ' ORDER BY session_start_unix, uuid', params)
        return [Stored(str(u), float(t) if _finite(t) else 0.0) for u, t in rows]

    def resolve(self, want: str) -> Stored:
        """The one session whose uuid starts with ``want``."""
        pattern = want.replace('\\', '\\\\').replace('%', '\\%').replace('_', '\\_') + '%'
        found = self.query("SELECT uuid, session_start_unix FROM sessions "
                           "WHERE uuid LIKE ? ESCAPE '\\' ORDER BY session_start_unix",
                           (pattern,))
        found = [(u, t) for u, t in found if str(u).startswith(want)]   # LIKE ignores case
        _exactly_one(want, [str(u) for u, _ in found])
        uuid, start = found[0]
        return Stored(str(uuid), float(start) if _finite(start) else 0.0)

    def records(self, uuids: list[str]) -> Iterable[tuple[str, str]]:
        """(uuid, JSON record) of the given sessions, one at a time, in the order given."""
        for uuid in uuids:
            rows = self.query('SELECT json_blob FROM sessions WHERE uuid = ?', (uuid,))
            if rows:
                yield uuid, rows[0][0]


def decode_record(blob, where: str, warn: Warn, wanted: Wanted | None = None) -> Session | None:
    try:
        return session_from_report(json.loads(blob), where, warn, wanted)
    except (TypeError, ValueError, HistoryError) as err:
        warn(f'{where}: unreadable ({err}); skipped')
        return None


def read_db(path: str | Path, warn: Warn = warn_stderr) -> list[Session]:
    """Every session of a ReFrame results database, oldest first. Opened read-only. Commands
    read only what they need (:meth:`ResultsDB.choose`, :mod:`commcheck.results.sample_index`)."""
    db = ResultsDB(path)
    return db.load(db.stored(), warn)


PERFLOG_NAMES = ('*.log', '*.log.h[0-9]*', '*.log.damaged-*')


def perflog_files(root: str | Path) -> list[Path]:
    """Perflogs under ``root``, with ReFrame's rotated files (``.h0``...) and files set aside
    as damaged (``.damaged-<time>``): history reads them all."""
    root = Path(root)
    found = {p for pattern in PERFLOG_NAMES for p in root.rglob(pattern) if p.is_file()}
    return sorted(found)


def read_perflog(path: str | Path, warn: Warn = warn_stderr) -> list[Sample]:
    """Samples of one perflog written with commcheck's format (one line per variable).
    Undecodable bytes and malformed lines are skipped with a warning naming the line."""
    from datetime import datetime

    from commcheck.site.rfmconfig import PERFLOG_FIELDS
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise HistoryError(f'{path}: cannot read perflog ({err})') from None
    fields = [f.removeprefix('check_') for f in PERFLOG_FIELDS]
    lines = raw.split(b'\n')
    header = lines[0].decode('utf-8', errors='replace').strip() if lines else ''
    if header.split('|') != fields:
        warn(f'{path}:1: not a commcheck perflog header; file skipped')
        return []
    out = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            text = line.decode('utf-8')
        except UnicodeDecodeError:
            warn(f'{path}:{number}: undecodable bytes; line skipped')
            continue
        parts = text.split('|')
        if len(parts) != len(fields):
            warn(f'{path}:{number}: {len(parts)} fields, expected {len(fields)}; line skipped')
            continue
        row = dict(zip(fields, parts))
        try:
            value = float(row['perf_value'])
            when = datetime.fromisoformat(row['job_completion_time']).timestamp()
        except ValueError:
            warn(f'{path}:{number}: value or time unreadable; line skipped')
            continue
        if not math.isfinite(value):
            warn(f'{path}:{number}: value {value} is not finite; line skipped')
            continue
        out.append(Sample(
            session='', time=when, system=row['system'], partition=row['partition'],
            environ=row['environ'], test=REPEAT.sub('', row['display_name']),
            variable=row['perf_var'], value=value,
            unit=experiments.unit_now(row['perf_var'], row['perf_unit']), result=row['result'],
            oversubscribed=row['reference_status'].startswith('oversubscribed'),
            provenance=(('binding', row['binding']), ('placement', row['placement']),
                        ('nodelist', ','.join(job_nodes(
                            {'job_nodelist': row['job_nodelist'].split(',')}))))))
    return out


def read_perflogs(root: str | Path, warn: Warn = warn_stderr) -> list[Sample]:
    return [s for path in perflog_files(root) for s in read_perflog(path, warn)]


def group(samples: Iterable[Sample]) -> dict[tuple, list[Sample]]:
    out: dict[tuple, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.key, []).append(s)
    return out
