"""A compact per-sample index of ReFrame's results database, derived from it, for ``history``
and the report's history section.

ReFrame's results database keeps each session as one JSON record: answering "this variable over
a year" from it means decoding every record. The index holds one row per sample (session,
variable, launch: value, unit, time, result, oversubscribed, provenance id; provenance dicts are
stored once each), so a variable's series is one indexed query and ``history`` streams variable
by variable with bounded memory.

The index is never the only copy of anything: it lives beside the database
(``results.db`` -> ``results.index.db``; under ``<state>/index/`` when that directory is not
writable) and is brought up to date on every open: sessions the database has and the index
lacks are added (one transaction per session, so a killed run leaves a consistent index),
sessions no longer in the database (deleted with ``reframe --delete-stored-sessions`` or
archived) are dropped. An index that SQLite cannot read is set aside
(``<name>.damaged-<time>``, kept intact) and rebuilt; one of another format is rebuilt.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from commcheck import experiments, paths
from commcheck.results import preflight
from commcheck.results.store import (
    Connected,
    HistoryError,
    ResultsDB,
    Sample,
    SampleKey,
    Session,
    Stored,
    Warn,
    decode_record,
    warn_stderr,
)

FORMAT = '2'                    #: bumped when the schema or what a row means changes
SCHEMA = (
    'CREATE TABLE meta(name TEXT PRIMARY KEY, value TEXT)',
    'CREATE TABLE sessions(id INTEGER PRIMARY KEY, uuid TEXT UNIQUE NOT NULL, '
    'time_start REAL, time_start_text TEXT, problem TEXT)',
    'CREATE TABLE keys(id INTEGER PRIMARY KEY, system TEXT, partition TEXT, environ TEXT, '
    'test TEXT, variable TEXT, unit TEXT, UNIQUE(system, partition, environ, test, variable))',
    'CREATE TABLE provenance(id INTEGER PRIMARY KEY, json TEXT UNIQUE NOT NULL)',
    'CREATE TABLE samples(session INTEGER NOT NULL REFERENCES sessions(id), key INTEGER NOT NULL, '
    'launch INTEGER, time REAL, value REAL, unit TEXT, result TEXT, oversubscribed INTEGER, '
    'provenance INTEGER)',
    'CREATE INDEX samples_by_key ON samples(key, session)',
    'CREATE INDEX samples_by_session ON samples(session)',
)
TABLES = {'meta', 'sessions', 'keys', 'provenance', 'samples'}


@dataclasses.dataclass(frozen=True)
class Indexed:
    """A session as the index knows it: enough to place its points on a time axis."""
    uuid: str
    time_start: float
    when: str                   # ReFrame's time_start text


def numbered(samples: Iterable[Sample]) -> Iterator[tuple[int, Sample]]:
    """Each sample with its launch number: 0, 1, ... within its series (key) in the order the
    session records them. The one derivation of a session's rows, for this index and the
    shared store (:mod:`commcheck.results.pgstore`)."""
    launches: dict[SampleKey, int] = {}
    for s in samples:
        launch = launches[s.key] = launches.get(s.key, -1) + 1
        yield launch, s


def index_path(db: str | Path) -> Path:
    """Where the index of ``db`` lives: beside it, else (not writable) under the state dir."""
    db = Path(db).resolve()
    beside = db.with_name(f'{db.stem}.index.db')
    if os.access(db.parent, os.W_OK) and (not beside.exists() or os.access(beside, os.W_OK)):
        return beside
    digest = hashlib.sha256(str(db).encode()).hexdigest()[:16]
    return paths.STATE_DIR / 'index' / f'{db.stem}-{digest}.index.db'


class SampleIndex(Connected):
    """The index of one results database, opened and brought up to date by :func:`open_index`:
    the results database's :class:`commcheck.results.history.Series`."""
    warn: Warn

    def __init__(self, db: ResultsDB, path: Path, warn: Warn):
        self.db, self.path, self.warn = db, path, warn
        self.conn: sqlite3.Connection | None = None
        self._prov: dict[int, tuple] = {}
        self._ids: dict[tuple, int] = {}        # (table, values) -> id, of committed rows

    # -- opening, checking, updating ----------------------------------------------------------
    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        # A derived file: an OS crash may cost it (it is then set aside and rebuilt), a killed
        # process never does (each session is one transaction).
        self.conn.execute('PRAGMA synchronous = NORMAL')
        tables = {r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            self._create()
        elif tables != TABLES or self._meta('format') != FORMAT:
            self.conn.close()
            self.path.unlink()
            self.warn(f'{self.path}: index of another format; rebuilt from {self.db.path}')
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=60)
            self._create()

    def _create(self) -> None:
        self.conn.execute('BEGIN IMMEDIATE')
        for statement in SCHEMA:
            self.conn.execute(statement)
        self.conn.executemany('INSERT INTO meta VALUES (?, ?)',
                              [('format', FORMAT), ('results_db', str(self.db.path.resolve()))])
        self.conn.execute('COMMIT')

    def _meta(self, name: str) -> str | None:
        row = self.conn.execute('SELECT value FROM meta WHERE name = ?', (name,)).fetchone()
        return row[0] if row else None

    def reopened(self) -> SampleIndex:
        """The same index through a connection of its own, read-only, not updated: for a
        process forked after this one opened it (SQLite forbids sharing a connection across
        fork)."""
        twin = SampleIndex(self.db, self.path, self.warn)
        twin.conn = sqlite3.connect(f'{self.path.resolve().as_uri()}?mode=ro', uri=True,
                                    isolation_level=None, timeout=60)
        return twin

    def update(self, only: Iterable[str] | None = None) -> dict[str, int]:
        """Add the sessions the database has and the index lacks (of ``only``, when given: a
        command that reads N sessions decodes at most N); drop those it no longer has.
        Returns how many were added and dropped."""
        stored = {s.uuid: s for s in self.db.stored()}
        # A session unreadable when it was indexed is tried again: its record may be repaired.
        known = dict(self.conn.execute('SELECT uuid, id FROM sessions WHERE problem IS NULL'))
        wanted = None if only is None else set(only)
        gone = [sid for u, sid in self.conn.execute('SELECT uuid, id FROM sessions')
                if u not in stored or (u not in known and (wanted is None or u in wanted))]
        if gone:
            self._drop(gone)
        new = [stored[u] for u in stored if u not in known and (wanted is None or u in wanted)]
        for uuid, blob in self.db.records([s.uuid for s in new]):
            self._add(stored[uuid], blob)
        for uuid, problem in self.conn.execute(
                'SELECT uuid, problem FROM sessions WHERE problem IS NOT NULL'):
            if wanted is None or uuid in wanted:
                self.warn(problem)
        return {'added': len(new), 'dropped': len([u for u in known if u not in stored])}

    def _drop(self, gone: list[int]) -> None:
        """Sessions no longer in the database, and what only they used, in one transaction."""
        self.conn.execute('BEGIN IMMEDIATE')
        try:
            self.conn.executemany('DELETE FROM samples WHERE session = ?', [(g,) for g in gone])
            self.conn.executemany('DELETE FROM sessions WHERE id = ?', [(g,) for g in gone])
            for table, column in (('keys', 'key'), ('provenance', 'provenance')):
                self.conn.execute(f'DELETE FROM {table} WHERE id NOT IN '
                                  f'(SELECT DISTINCT {column} FROM samples)')
            self.conn.execute('COMMIT')
        except BaseException:
            self.conn.execute('ROLLBACK')
            raise
        finally:
            self._ids.clear()

    def _add(self, stored: Stored, blob) -> None:
        """One session and its samples, in one transaction."""
        problems: list[str] = []
        where = f'{self.db.path} session {stored.uuid}'
        session = decode_record(blob, where, problems.append)
        self.conn.execute('BEGIN IMMEDIATE')
        try:
            if self.conn.execute('SELECT 1 FROM sessions WHERE uuid = ?',
                                 (stored.uuid,)).fetchone():
                self.conn.execute('ROLLBACK')       # another process added it meanwhile
                return
            sid = self.conn.execute(
                'INSERT INTO sessions(uuid, time_start, time_start_text, problem) '
                'VALUES (?, ?, ?, ?)',
                (stored.uuid, stored.time_start, session.when if session else '',
                 None if session else problems[-1])).lastrowid
            if session is not None:
                self.conn.executemany('INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                                      list(self._rows(sid, session)))
            self.conn.execute('COMMIT')
        except BaseException:
            self.conn.execute('ROLLBACK')
            self._ids.clear()                   # ids of rolled-back rows are gone
            raise
        for problem in problems if session else ():
            self.warn(problem)

    def _rows(self, sid: int, session: Session) -> Iterator[tuple]:
        for launch, s in numbered(session.samples):
            kid = self._id('keys', s.key, s.unit)
            pid = self._id('provenance', s.provenance)
            yield (sid, kid, launch, s.time, s.value, s.unit, s.result, int(s.oversubscribed),
                   pid)

    def _id(self, table: str, values: tuple, unit: str = '') -> int:
        """The id of a key (with its first unit) or a provenance (stored once each), added
        if new."""
        known = self._ids.get((table, values))
        if known is not None:
            return known
        if table == 'keys':
            found = self.conn.execute('SELECT id FROM keys WHERE system = ? AND partition = ? '
                                      'AND environ = ? AND test = ? AND variable = ?',
                                      values).fetchone()
            insert = ('INSERT INTO keys(system, partition, environ, test, variable, unit) '
                      'VALUES (?, ?, ?, ?, ?, ?)', (*values, unit))
        else:
            text = json.dumps(values)
            found = self.conn.execute('SELECT id FROM provenance WHERE json = ?',
                                      (text,)).fetchone()
            insert = ('INSERT INTO provenance(json) VALUES (?)', (text,))
        ident = found[0] if found else self.conn.execute(*insert).lastrowid
        self._ids[(table, values)] = ident
        return ident

    # -- reading ------------------------------------------------------------------------------
    def sessions(self, chosen: Iterable[Stored] | None = None) -> list[Indexed]:
        """The readable indexed sessions (all, or those chosen), oldest first."""
        rows = self.conn.execute('SELECT uuid, time_start, time_start_text FROM sessions '
                                 'WHERE problem IS NULL ORDER BY time_start, uuid').fetchall()
        wanted = None if chosen is None else {s.uuid for s in chosen}
        return [Indexed(u, t, w or '') for u, t, w in rows if wanted is None or u in wanted]

    def keys(self, chosen: Iterable[Indexed] | None = None, measured: bool = False
             ) -> list[tuple[SampleKey, str]]:
        """(key, unit) of every variable stored (in the chosen sessions), sorted by key;
        ``measured``: only those with a launch that :meth:`launches` gives (not
        oversubscribed, value > 0)."""
        where = ['x.oversubscribed = 0 AND x.value > 0'] if measured else []
        params: list = []
        uuids = None if chosen is None else [s.uuid for s in chosen]
        if uuids is not None and len(uuids) < len(self.sessions()):
            where.append(f's.uuid IN ({",".join("?" * len(uuids))})')
            params = uuids
        sql = 'SELECT system, partition, environ, test, variable, unit FROM keys k'
        if where:
            sql += (' WHERE EXISTS (SELECT 1 FROM samples x JOIN sessions s ON x.session = s.id'
                    f' WHERE x.key = k.id AND {" AND ".join(where)})')
        return sorted((SampleKey(*r[:5]), experiments.unit_now(r[4], r[5]))
                      for r in self._query(sql, params))

    def launches(self, key: tuple, chosen: Iterable[Indexed] | None = None
                 ) -> list[tuple[str, list[float], str, list[tuple]]]:
        """One variable's measured launches (not oversubscribed, value > 0; in the chosen
        sessions), a session at a time by start: (uuid, values, unit of the first, each
        launch's provenance). What a series over a long history needs, without a
        :class:`Sample` per launch."""
        wanted = None if chosen is None else {s.uuid for s in chosen}
        rows = self._query(
            'SELECT s.uuid, x.value, x.unit, x.provenance FROM keys k JOIN samples x ON '
            'x.key = k.id JOIN sessions s ON x.session = s.id WHERE k.system = ? AND '
            'k.partition = ? AND k.environ = ? AND k.test = ? AND k.variable = ? AND '
            'x.oversubscribed = 0 AND x.value > 0 ORDER BY s.time_start, s.uuid, x.launch', key)
        out: list[tuple[str, list[float], str, list[tuple]]] = []
        known, current = self._prov, None
        for uuid, value, unit, pid in rows:
            if wanted is not None and uuid not in wanted:
                continue
            if uuid != current:
                current, values, provenances = uuid, [], []
                out.append((uuid, values, experiments.unit_now(key[4], unit), provenances))
            values.append(value)
            prov = known.get(pid)
            provenances.append(self._provenance(pid) if prov is None else prov)
        return out

    def _provenance(self, pid: int) -> tuple:
        if pid not in self._prov:
            row = self._query('SELECT json FROM provenance WHERE id = ?', (pid,))
            self._prov[pid] = tuple(tuple(p) for p in json.loads(row[0][0])) if row else ()
        return self._prov[pid]

    def _query(self, sql: str, params=()) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as err:
            raise HistoryError(f'{self.path}: index unreadable ({err}); run again to rebuild '
                               f'it from {self.db.path}') from None


def _set_aside(path: Path, why: str) -> str:
    """The damaged index moved aside with its SQLite journal, which would otherwise be
    replayed into the new index."""
    line = preflight.set_aside(path, why, 'kept intact')
    moved = path.with_name(line.split('moved aside to ')[1].split(' (')[0])
    for suffix in ('-journal', '-wal', '-shm'):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.rename(moved.with_name(moved.name + suffix))
    return line


def open_index(db: str | Path | ResultsDB, warn: Warn = warn_stderr,
               path: Path | None = None, only: Iterable[str] | None = None) -> SampleIndex:
    """The index of ``db``, up to date with it (for the sessions ``only`` names, when given);
    a damaged index is set aside and rebuilt."""
    db = db if isinstance(db, ResultsDB) else ResultsDB(db)
    path = path or index_path(db.path)
    for attempt in (1, 2):
        index = SampleIndex(db, path, warn)
        try:
            why = preflight.index_damage(path)
            if why:
                warn(f'{_set_aside(path, why)}; rebuilt from {db.path}')
            index._connect()
            index.update(only)
            return index
        except sqlite3.OperationalError as err:     # locked, disk full: not damage
            index.close()
            raise HistoryError(f'{path}: cannot update the history index ({err})') from None
        except sqlite3.DatabaseError as err:
            index.close()
            if attempt == 2 or not path.exists():
                raise HistoryError(f'{path}: cannot write the history index ({err})') from None
            warn(f'{_set_aside(path, f"damaged ({err})")}; rebuilt from {db.path}')
    raise AssertionError('unreachable')
