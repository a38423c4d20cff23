"""Before a run: keep what was recorded safe from what damaged it, and refuse what would lose
the session.

A perflog with undecodable bytes stops ReFrame's next session at its first performance test;
a perflog whose last record was cut off mid-write glues the next record onto it; a results
database that is not one, is empty (0 bytes, or no tables: a killed first write, a full disk),
has another schema than ReFrame's or is read-only makes ReFrame fail when it stores the session
("failed to store results in the database") and every later session goes missing from it. Each
such file is moved aside intact (renamed ``<name>.damaged-<time>``, never rewritten or deleted)
and reported in one line, so the session runs and ReFrame writes a clean file. History reads the
set-aside perflogs too (:func:`commcheck.results.store.perflog_files`).

What cannot be set aside (a reports or state path that is a file, a directory commcheck cannot
write) is a :func:`problems` line: ``commcheck run`` and ``commcheck preflight`` refuse it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path


def set_aside(path: Path, why: str, kept: str = 'kept intact, still read by history') -> str:
    stamp = time.strftime('%Y%m%dT%H%M%S')
    target = path.with_name(f'{path.name}.damaged-{stamp}')
    n = 1
    while target.exists():
        target = path.with_name(f'{path.name}.damaged-{stamp}-{n}')
        n += 1
    path.rename(target)
    return f'{path}: {why}; moved aside to {target.name} ({kept})'


def perflog_damage(path: Path) -> str | None:
    """What is wrong with a perflog that ReFrame would trip over, or None."""
    if not os.access(path, os.W_OK):
        return 'not writable (ReFrame appends to it)'
    data = path.read_bytes()
    if not data:
        return None
    try:
        data.decode('utf-8')
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b'\n') + 1
        return f'undecodable bytes at line {line}'
    if not data.endswith(b'\n'):
        lines = data.count(b'\n') + 1
        return f'last record (line {lines}) was cut off mid-write'
    return None


def protect_perflogs(root: Path) -> list[str]:
    moved = []
    if not root.is_dir():
        return moved
    for path in sorted(root.rglob('*.log')):
        try:
            why = perflog_damage(path)
        except OSError as err:
            why = f'unreadable ({err})'
        if why:
            moved.append(set_aside(path, why))
    return moved


def reframe_schema() -> str:
    """The results database schema the installed ReFrame writes."""
    from reframe.frontend.reporting.storage import _SqliteStorage
    return _SqliteStorage.SCHEMA_VERSION


def _schema(conn, tables: set[str]) -> str | None:
    if 'metadata' not in tables:
        return None
    row = conn.execute('SELECT schema_version FROM metadata').fetchone()
    return row[0] if row else None


def _sqlite_state(path: Path, count: str | None = None):
    """(problem, tables, schema) of an SQLite file opened read-only: problem is why it cannot
    be read or is damaged (``PRAGMA quick_check``), else None. ``count``: a table whose rows
    are also read, where it exists."""
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            check = conn.execute('PRAGMA quick_check').fetchone()
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type='table'")}
            schema = _schema(conn, tables)
            if count in tables:
                conn.execute(f'SELECT count(*) FROM {count}').fetchone()
        finally:
            conn.close()
    except sqlite3.Error as err:
        return f'not a readable SQLite database ({err})', set(), None
    if not check or check[0] != 'ok':
        return f'damaged ({check[0] if check else "no answer to quick_check"})', tables, schema
    return None, tables, schema


def results_db_damage(path: Path) -> str | None:
    """Why ReFrame could not store a session in ``path``, or None."""
    if not path.exists():
        return None
    if path.is_dir() or not path.is_file():
        return 'not a file'
    if path.stat().st_size == 0:
        return 'empty (0 bytes: a killed first write or a full disk; ReFrame would not ' \
               'create its tables in it)'
    problem, tables, schema = _sqlite_state(path)
    if problem:
        return problem
    if not tables:
        return 'holds no tables (ReFrame would not create them in it)'
    if not {'sessions', 'testcases'} <= tables:
        return 'not a ReFrame results database (no sessions or testcases table)'
    if schema is not None and schema != reframe_schema():
        return f'schema {schema}, but this ReFrame writes schema {reframe_schema()}'
    if not os.access(path, os.R_OK | os.W_OK):
        return 'not writable (ReFrame could not store the session in it)'
    return None


def protect_results_db(path: Path) -> list[str]:
    why = results_db_damage(path)
    return [set_aside(path, why)] if why else []


def index_damage(path: Path) -> str | None:
    """What is wrong with commcheck's history index (:mod:`commcheck.results.sample_index`), or
    None. Only damage counts: an empty index, or one of another format, is rebuilt, not moved."""
    if not path.exists():
        return None
    if not path.is_file():
        return 'not a file'
    return _sqlite_state(path, count='samples')[0]


def protect(perflog_dir: Path, results_db: Path) -> list[str]:
    """Set aside every damaged file a run would trip over; returns one line per file."""
    return protect_perflogs(perflog_dir) + protect_results_db(results_db)


def _writable_dir(path: Path, what: str) -> str | None:
    if path.exists() and not path.is_dir():
        return f'{path} ({what}) is not a directory'
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        return f'{path} ({what}): {probe} is not a directory'
    if not os.access(probe, os.W_OK | os.X_OK):
        return f'{probe} ({what}) is not writable'
    return None


def problems(reports_dir: Path, state_dir: Path) -> list[str]:
    """What would lose a session and cannot be set aside: one line each."""
    found = [_writable_dir(state_dir, 'COMMCHECK_STATE: stage and output'),
             _writable_dir(reports_dir, 'COMMCHECK_REPORTS')]
    if not any(found):
        for sub, what in (('runs', 'run reports'), ('perflogs', 'perflogs')):
            found.append(_writable_dir(reports_dir / sub, what))
        lock = reports_dir / '.db.lock'
        if lock.exists() and (not lock.is_file() or not os.access(lock, os.R_OK | os.W_OK)):
            found.append(f'{lock} (the results database lock) is not a writable file')
    return [line for line in found if line]

