"""``commcheck archive --before DATE``: keep the live results database small without losing a
session.

Sessions that started before DATE are moved, one at a time, into an archive database with
ReFrame's own schema (default ``reports/archive.db``; ``reframe``, ``commcheck history --db``
and ``commcheck report --db`` read it like the live one): each session's row and test-case rows
are copied in one transaction, read back from the archive through a new connection and compared
(the record byte for byte, the number of test cases), and only then deleted from the live
database. A session already in the archive with a different record stops the move, naming it.
The live database is then compacted (SQLite ``VACUUM``). All of it under ReFrame's own lock of
the database directory (``.db.lock``), so no session is stored meanwhile. Killed at any point,
every session is in the live database, the archive, or both. The sample index drops the moved
sessions at its next open.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from commcheck.results.store import RFM_SCHEMA, HistoryError, ResultsDB, Stored

SESSION_COLUMNS = 'uuid, session_start_unix, session_end_unix, json_blob, report_file'


def _lock(db: Path):
    """ReFrame's reader-writer lock of the results database directory (its storage code
    takes the same lock to store a session)."""
    from reframe.utility.osext import ReadWriteFileLock
    return ReadWriteFileLock(str(db.parent / '.db.lock'), 0o644).write_lock()


def open_archive(path: Path) -> sqlite3.Connection:
    fresh = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        if fresh:
            with conn:
                for statement in RFM_SCHEMA:
                    conn.execute(statement)
        version = conn.execute('SELECT schema_version FROM metadata').fetchall()
    except sqlite3.Error as err:
        conn.close()
        raise HistoryError(f'{path}: not a ReFrame results database to archive into '
                           f'({err})') from None
    if version != [('1.0',)]:
        conn.close()
        raise HistoryError(f'{path}: results database schema {version}, expected 1.0')
    return conn


def _copy(live: sqlite3.Connection, into: sqlite3.Connection, uuid: str) -> int:
    """Copy one session into the archive; returns its number of test cases."""
    row = live.execute(f'SELECT {SESSION_COLUMNS} FROM sessions WHERE uuid = ?',
                       (uuid,)).fetchone()
    cases = live.execute('SELECT * FROM testcases WHERE session_uuid = ?', (uuid,)).fetchall()
    return copy_in(into, row, cases)


def copy_in(into: sqlite3.Connection, row: tuple, cases: list[tuple]) -> int:
    """One session's row (:data:`SESSION_COLUMNS`) and test case rows into the archive, in
    one transaction; already there with the same record: nothing to do; with another record:
    stop. Returns its number of test cases."""
    uuid = row[0]
    there = into.execute('SELECT json_blob FROM sessions WHERE uuid = ?', (uuid,)).fetchone()
    if there is not None:
        if there[0] != row[3]:
            raise HistoryError(f'session {uuid} is already archived with another record; '
                               f'nothing more moved')
        return len(cases)
    with into:
        into.execute(f'INSERT INTO sessions({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?)', row)
        if cases:
            into.executemany(f'INSERT INTO testcases VALUES ({",".join("?" * len(cases[0]))})',
                             cases)
    return len(cases)


def verify(archive: Path, uuid: str, blob, cases: int) -> None:
    check = sqlite3.connect(f'file:{archive}?mode=ro', uri=True)
    try:
        stored = check.execute('SELECT json_blob FROM sessions WHERE uuid = ?',
                               (uuid,)).fetchone()
        count = check.execute('SELECT count(*) FROM testcases WHERE session_uuid = ?',
                              (uuid,)).fetchone()[0]
    finally:
        check.close()
    if stored is None or stored[0] != blob or count != cases:
        raise HistoryError(f'{archive}: session {uuid} did not read back as copied; '
                           f'it stays in the live database')


def move(stored: ResultsDB, before: float, archive: Path) -> list[Stored]:
    """Move the sessions of the results database ``stored`` (the command's, open) started
    before ``before`` into ``archive``."""
    chosen = [s for s in stored.stored(until=before) if s.time_start < before]
    if not chosen:
        return []
    db = stored.path
    with _lock(db):
        into = open_archive(archive)
        live = sqlite3.connect(db)
        try:
            for session in chosen:
                cases = _copy(live, into, session.uuid)
                blob = live.execute('SELECT json_blob FROM sessions WHERE uuid = ?',
                                    (session.uuid,)).fetchone()[0]
                verify(archive, session.uuid, blob, cases)
                with live:
                    live.execute('DELETE FROM testcases WHERE session_uuid = ?', (session.uuid,))
                    live.execute('DELETE FROM sessions WHERE uuid = ?', (session.uuid,))
            live.execute('VACUUM')
        except sqlite3.Error as err:
            raise HistoryError(f'{db}: archiving stopped ({err}); every session is in the '
                               f'live database or in {archive}') from None
        finally:
            live.close()
            into.close()
    return chosen
