"""Before a run: keep what was recorded safe from what damaged it.

A perflog with undecodable bytes stops ReFrame's next session at its first performance test;
a perflog whose last record was cut off mid-write glues the next record onto it; a results
database that is not one makes ReFrame fail when it stores the session. Each such file is moved
aside intact (renamed ``<name>.damaged-<time>``, never rewritten or deleted) and reported in one
line, so the session runs and appends to a clean file. History reads the set-aside files too
(:func:`commcheck.history.perflog_files`).
"""

from __future__ import annotations

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


def results_db_damage(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            check = conn.execute('PRAGMA quick_check').fetchone()
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type='table'")}
        finally:
            conn.close()
    except sqlite3.Error as err:
        return f'not a readable SQLite database ({err})'
    if not check or check[0] != 'ok':
        return f'damaged ({check[0] if check else "no answer to quick_check"})'
    if tables and 'sessions' not in tables:
        return 'not a ReFrame results database (no sessions table)'
    return None


def protect_results_db(path: Path) -> list[str]:
    why = results_db_damage(path)
    return [set_aside(path, why)] if why else []


def index_damage(path: Path) -> str | None:
    """What is wrong with commcheck's history index (:mod:`commcheck.sample_index`), or None."""
    why = results_db_damage(path)
    if why and 'no sessions table' in why:
        return None                     # an empty or foreign-format index is rebuilt, not moved
    if why is None and path.exists():
        conn = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        try:
            conn.execute('SELECT count(*) FROM samples').fetchone()
        except sqlite3.Error as err:
            return f'damaged ({err})'
        finally:
            conn.close()
    return why


def protect(perflog_dir: Path, results_db: Path) -> list[str]:
    """Set aside every damaged file a run would trip over; returns one line per file."""
    return protect_perflogs(perflog_dir) + protect_results_db(results_db)

