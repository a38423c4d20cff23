"""Reading the shared PostgreSQL store (:mod:`commcheck.results.pgstore` writes it): the same
interface as a local results database (:class:`commcheck.results.history.History`), so
``baseline``, ``compare``, ``history``, ``report`` and ``sessions`` read either alike.

- The listing and the records (``stored``, ``resolve``, ``choose``, ``records``, ``load``) come
  from ``commcheck.sessions``; the per-launch series (``sessions``, ``keys``, ``launches``) from
  ``commcheck.measurements`` with SQL, one variable at a time: no local index is built.
- One snapshot a command: everything a command reads is read in one ``REPEATABLE READ READ
  ONLY`` transaction, and a worker process reads through a connection of its own that imports
  that transaction's snapshot (``SET TRANSACTION SNAPSHOT``). A writer commits a session whole
  in one transaction, so a reader sees a session whole or not at all, and every part of one
  command sees the same sessions.
- Every value read is validated: a record is decoded and checked as a local one is (a damaged
  one: one warning naming the session, the others read); a measurement that is not a finite
  number, or a provenance that is not an object, is skipped with a warning naming its session.
- The store unreachable, or lost in the middle of a read:
  :class:`commcheck.results.history.HistoryUnavailable`, one line, the address without a
  password; never a verdict on what was read before.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from commcheck import dburl, experiments
from commcheck.results import pgstore
from commcheck.results.history import HistoryUnavailable, Listed
from commcheck.results.sample_index import Indexed
from commcheck.results.store import (
    Connected,
    HistoryError,
    Listing,
    SampleKey,
    Stored,
    Warn,
    _exactly_one,
    warn_stderr,
)

S = pgstore.SCHEMA
#: A reader's transaction may stay open while its worker processes read (a history of a year
#: searched in a process per core); the writer's shorter limit would end it under them.
READER_IDLE_TIMEOUT = '30min'
#: pg_advisory_lock key held while ``commcheck archive`` moves sessions out of the store
ARCHIVE_LOCK = int.from_bytes(hashlib.sha256(b'commcheck.archive').digest()[:8], 'big') >> 1
#: ReFrame's time_start text, read from the head of the record (session_info comes first in
#: ReFrame's records); the whole record is decoded, here, only where the head does not hold it.
TIME_START = r"""substring(left(record, 65536) from '"time_start": "([^"]*)"')"""


def _unavailable(err: Exception, address: str) -> HistoryUnavailable:
    """One line: the store cannot be read now, or refuses this reader; address redacted."""
    if isinstance(err, (pgstore.StoreUnavailable, pgstore.StoreRefused)):
        said = str(err)
    else:
        said = str(pgstore.failure(err, address))
    return HistoryUnavailable(f'history unavailable: {dburl.redact(said)}')


def _begin(conn, address: str, snapshot: str | None = None) -> None:
    """The one read-only snapshot transaction of this connection (imported when given)."""
    import psycopg
    try:
        conn.execute(f"SET idle_in_transaction_session_timeout = '{READER_IDLE_TIMEOUT}'")
        conn.execute('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
        if snapshot:
            conn.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
    except psycopg.Error as err:
        raise _unavailable(err, address) from None


def _connect(address: str):
    try:
        return pgstore.connect(address, 'read')
    except (pgstore.StoreUnavailable, pgstore.StoreRefused) as err:
        raise _unavailable(err, address) from None


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


class StoreSeries(Connected):
    """The per-launch series of the store (``commcheck.measurements``), through the snapshot
    of the command: its :class:`commcheck.results.history.Series`."""
    warn: Warn

    def __init__(self, history: StoreHistory, conn, owned: bool):
        self.history, self.conn, self.owned = history, conn, owned
        self.warn = history.warn
        self._prov: dict[int, tuple] = {}
        self._said: set[tuple[str, str]] = set()

    def _query(self, sql: str, params=()) -> list[tuple]:
        return self.history.query(sql, params, self.conn)

    def sessions(self, chosen=None) -> list[Indexed]:
        """The readable sessions (all, or those chosen), oldest first."""
        wanted = None if chosen is None else {s.uuid for s in chosen}
        return [s for s in self.history.indexed(self.conn)
                if wanted is None or s.uuid in wanted]

    def keys(self, chosen=None, measured: bool = False) -> list[tuple[SampleKey, str]]:
        """(key, unit) of every variable stored (in the chosen sessions), sorted by key;
        ``measured``: only those with a launch that :meth:`launches` gives."""
        where, params = [], []
        if measured:
            where.append("NOT oversubscribed AND value > 0 AND value < 'Infinity'")
        if chosen is not None:
            uuids = [s.uuid for s in chosen]
            if len(uuids) < len(self.sessions()):
                where.append('session = ANY(%s::uuid[])')
                params.append(uuids)
        sql = (f'SELECT cluster, partition, environ, test, variable, min(unit) FROM '
               f'{S}.measurements' + (f' WHERE {" AND ".join(where)}' if where else '')
               + ' GROUP BY cluster, partition, environ, test, variable')
        return sorted((SampleKey(*r[:5]), experiments.unit_now(r[4], r[5]))
                      for r in self._query(sql, params))

    def launches(self, key: tuple, chosen=None) -> list[tuple[str, list[float], str, list]]:
        """One variable's measured launches (not oversubscribed, value > 0; in the chosen
        sessions), a session at a time by start: (uuid, values, unit of the first, each
        launch's provenance)."""
        wanted = None if chosen is None else {s.uuid for s in chosen}
        rows = self._query(
            f'SELECT m.session::text, m.value, m.unit, m.provenance FROM {S}.measurements m '
            f'JOIN {S}.sessions s ON s.uuid = m.session WHERE m.cluster = %s AND '
            f'm.partition = %s AND m.environ = %s AND m.test = %s AND m.variable = %s AND NOT '
            f'm.oversubscribed AND m.value > 0 AND s.problem IS NULL '
            f'ORDER BY s.start_unix, s.uuid, m.launch', tuple(key))
        out: list[tuple[str, list[float], str, list]] = []
        current = None
        for uuid, value, unit, pid in rows:
            if wanted is not None and uuid not in wanted:
                continue
            if not _finite(value):
                self._once(uuid, f'{key[3]} {key[4]}: not a finite value ({value!r})')
                continue
            if uuid != current:
                current, values, provenances = uuid, [], []
                out.append((uuid, values, experiments.unit_now(key[4], unit), provenances))
            values.append(float(value))
            provenances.append(self._provenance(pid, uuid))
        return out

    def _once(self, uuid: str, what: str) -> None:
        if (uuid, what) not in self._said:
            self._said.add((uuid, what))
            self.warn(f'{self.history.where} session {uuid}: {what}; skipped')

    def _provenance(self, pid: int, uuid: str) -> tuple:
        if pid not in self._prov:
            rows = self._query(f'SELECT provenance FROM {S}.provenances WHERE id = %s', (pid,))
            found = rows[0][0] if rows else None
            if not (isinstance(found, dict) and all(isinstance(v, str) for v in found.values())):
                self._once(uuid, f'provenance {pid} is not an object of texts ({found!r})')
                found = {}
            self._prov[pid] = tuple(sorted(found.items()))
        return self._prov[pid]

    def reopened(self) -> StoreSeries:
        """The same series through a connection of its own, in the same snapshot: for a
        forked worker (a connection is never shared across fork)."""
        conn = _connect(self.history.address)
        _begin(conn, self.history.address, self.history.snapshot)
        return StoreSeries(self.history, conn, owned=True)

    def close(self) -> None:
        """Ends its connection if its own (a forked worker's, :meth:`reopened`)."""
        if self.owned:
            super().close()


class StoreHistory(Connected, Listing):
    """The shared store as a :class:`commcheck.results.history.History`, read in one snapshot
    (see the module)."""

    def __init__(self, address: str, warn: Warn = warn_stderr):
        import psycopg
        self.address, self.warn = address, warn
        self.where = dburl.redact(address)
        self.conn = _connect(address)
        self._indexed: list[Indexed] | None = None
        try:
            pgstore.ensure_schema(self.conn, address, create=False)
            _begin(self.conn, address)
            self.snapshot = self.query('SELECT pg_export_snapshot()')[0][0]
        except (pgstore.StoreUnavailable, pgstore.StoreRefused, psycopg.Error) as err:
            self.close()
            raise _unavailable(err, address) from None
        except HistoryUnavailable:
            self.close()
            raise

    def query(self, sql: str, params=(), conn=None) -> list[tuple]:
        import psycopg
        try:
            return (conn or self.conn).execute(sql, params).fetchall()
        except psycopg.Error as err:
            raise _unavailable(err, self.address) from None

    def _rows(self, rows) -> list[Stored]:
        return [Stored(str(u), float(t) if _finite(t) else 0.0) for u, t in rows]

    def stored(self, since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        """The sessions started in [since, until] (on ``cluster``), oldest first."""
        where, params = [], []
        for clause, value in (('start_unix >= %s', since), ('start_unix <= %s', until),
                              ('cluster = %s', cluster)):
            if value is not None:
                where.append(clause)
                params.append(value)
        sql = f'SELECT uuid::text, start_unix FROM {S}.sessions'
        if where:
            sql += ' WHERE ' + ' AND '.join(where)
        return self._rows(self.query(sql + ' ORDER BY start_unix, uuid', params))

    def resolve(self, want: str) -> Stored:
        """The one session whose uuid starts with ``want``."""
        found = self._rows(self.query(
            f"SELECT uuid::text, start_unix FROM {S}.sessions WHERE uuid::text LIKE %s "
            f"ORDER BY start_unix", (want.lower().replace('%', '').replace('_', '') + '%',)))
        found = [s for s in found if s.uuid.startswith(want)]
        _exactly_one(want, [s.uuid for s in found])
        return found[0]

    def records(self, uuids: list[str]):
        """(uuid, JSON record) of the given sessions, in the order given."""
        got = dict(self.query(f'SELECT uuid::text, record FROM {S}.sessions '
                              f'WHERE uuid = ANY(%s::uuid[])', (list(uuids),)))
        for uuid in uuids:
            if uuid in got:
                yield uuid, got[uuid]

    def fetcher(self, uuids: list[str]):
        """Records are read here, in the command's snapshot, before any worker decodes them
        (a worker may not use this connection)."""
        got = dict(self.records(uuids))
        return got.get

    def indexed(self, conn=None) -> list[Indexed]:
        """Every readable session with ReFrame's time_start text, oldest first (a record
        that cannot be decoded: warned, naming the session, and left out, as the sample
        index leaves it out)."""
        if self._indexed is None:
            rows = self.query(f'SELECT uuid::text, start_unix, {TIME_START} FROM {S}.sessions '
                              f'WHERE problem IS NULL ORDER BY start_unix, uuid', (), conn)
            self._indexed = []
            for uuid, start, when in rows:
                when = when if when is not None else self._time_start(uuid, conn)
                if when is not None:
                    self._indexed.append(Indexed(uuid, float(start) if _finite(start) else 0.0,
                                                 when))
        return self._indexed

    def _time_start(self, uuid: str, conn) -> str | None:
        """The session's time_start text from its decoded record; None (warned) if the
        record is not a run report."""
        rows = self.query(f'SELECT record FROM {S}.sessions WHERE uuid = %s', (uuid,), conn)
        try:
            info = json.loads(rows[0][0])['session_info'] if rows else None
            if not isinstance(info, dict):
                raise ValueError('no session_info')
        except (TypeError, ValueError, KeyError) as err:
            self.warn(f'{self.where} session {uuid}: unreadable ({err}); skipped')
            return None
        return str(info.get('time_start', ''))

    def series(self, only=None, warn: Warn | None = None) -> StoreSeries:
        """The measurements, through this command's connection and snapshot."""
        if warn is not None:
            self.warn = warn
        return StoreSeries(self, self.conn, owned=False)

    def has_series(self) -> bool:
        return True

    def with_check(self, check: str, system: str, partition: str, environ: str
                   ) -> list[Stored]:
        """The sessions that measured ``check`` on that environment, oldest first."""
        return self._rows(self.query(
            f'SELECT uuid::text, start_unix FROM {S}.sessions s WHERE EXISTS (SELECT 1 FROM '
            f'{S}.measurements m WHERE m.session = s.uuid AND m.cluster = %s AND '
            f'm.partition = %s AND m.environ = %s AND (m.test = %s OR m.test LIKE %s)) '
            f'ORDER BY start_unix, uuid',
            (system, partition, environ, check, check.replace('%', '') + ' %')))

    def listing(self, cluster: str | None = None) -> list[Listed]:
        rows = self.query(f'SELECT uuid::text, start_unix, site, cluster, host, cases FROM '
                          f'{S}.sessions' + (' WHERE cluster = %s' if cluster else '')
                          + ' ORDER BY start_unix, uuid', (cluster,) if cluster else ())
        return [Listed(u, float(t) if _finite(t) else 0.0, s, c, h, int(n or 0))
                for u, t, s, c, h, n in rows]

    def archive(self, before: float, into: Path) -> list[Stored]:
        """Move the sessions started before ``before`` out of the store into the SQLite
        archive ``into`` (ReFrame's schema, as a local archive): each session copied, read
        back and compared byte for byte, and only then deleted from the store with its
        measurements (one transaction each), under an advisory lock so that two archives do
        not interleave. Killed at any point, every session is in the store, the archive, or
        both. It deletes, so it runs as the store's owner role: another role is refused
        before anything is copied."""
        import psycopg
        chosen = [s for s in self.stored(until=before) if s.time_start < before]
        if not chosen:
            return []
        conn = _connect(self.address)
        try:
            if not conn.execute('SELECT has_table_privilege(%s, %s)',
                                (f'{S}.sessions', 'DELETE')).fetchone()[0]:
                raise HistoryError(f'{self.where}: this role may not delete sessions; archive '
                                   f'moves them out of the store, so run it as the owner role '
                                   f'(commcheck_owner); nothing moved')
            conn.execute('SELECT pg_advisory_lock(%s)', (ARCHIVE_LOCK,))
            return [s for s in chosen if _move_one(conn, s, into)]
        except psycopg.Error as err:
            raise _unavailable(err, self.address) from None
        finally:
            conn.close()


def _case_rows(uuid: str, blob: str) -> list[tuple]:
    """The ``testcases`` rows ReFrame stores for a record (none if it cannot be decoded: the
    record is archived as it is)."""
    try:
        report = json.loads(blob)
        return [(c.get('name'), c.get('system'), c.get('partition'), c.get('environ'),
                 c.get('job_completion_time_unix'), uuid, c.get('uuid'))
                for run in report['runs'] for c in run['testcases']]
    except (TypeError, ValueError, KeyError, AttributeError):
        return []


def _move_one(conn, session: Stored, into: Path) -> bool:
    """One session from the store into the archive; False if another archive took it."""
    from commcheck.results import archive
    row = conn.execute(f'SELECT uuid::text, start_unix, end_unix, record FROM {S}.sessions '
                       f'WHERE uuid = %s', (session.uuid,)).fetchone()
    if row is None:
        return False
    uuid, start, end, blob = row
    cases = _case_rows(uuid, blob)
    out = archive.open_archive(into)
    try:
        archive.copy_in(out, (uuid, start, end, blob, None), cases)
    finally:
        out.close()
    archive.verify(into, uuid, blob, len(cases))
    with conn.transaction():
        conn.execute(f'DELETE FROM {S}.sessions WHERE uuid = %s', (uuid,))
    return True
