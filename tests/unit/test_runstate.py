"""The mechanics under ``commcheck run``'s promises, with real processes: one run per state
directory, a dead run's leftovers found by its run id and ended, ReFrame started with default
signal dispositions and dying with commcheck, and every results database that would lose a
session recognised before ReFrame runs."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from commcheck.cli import run as run_cli
from commcheck.cli import runstate
from commcheck.errors import UserError
from commcheck.results import preflight


def _alive(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state != 'Z'


def _sig_ignored(pid: int, sig: int) -> bool:
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('SigIgn:'):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    raise AssertionError('no SigIgn line')


def test_a_second_lock_holder_is_refused_naming_the_first(tmp_path):
    holder = subprocess.Popen([sys.executable, '-c', textwrap.dedent(f'''
        import sys, time
        from commcheck.cli.runstate import RunLock
        lock = RunLock({str(tmp_path)!r}); lock.acquire(['first'])
        print('held', flush=True); time.sleep(60)''')], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'held'
        with pytest.raises(UserError, match=rf'another commcheck run \(pid {holder.pid}, '
                                            r'started 20'):
            runstate.RunLock(tmp_path).acquire(['second'])
    finally:
        holder.kill()
        holder.wait()
    lock = runstate.RunLock(tmp_path)       # its holder died: taken over, its record kept
    lock.acquire(['third'])
    assert lock.previous['pid'] == holder.pid and lock.previous['argv'] == ['first']
    assert 'was stopped before it finished' in runstate.clean_after_dead_run(lock)
    lock.release()
    again = runstate.RunLock(tmp_path)
    again.acquire(['fourth'])
    assert again.previous is None and runstate.clean_after_dead_run(again) is None
    again.release()


def _programs(pids: list[int]) -> list[str]:
    """The program each process runs now (its /proc comm), '' for one that is gone."""
    out = []
    for pid in pids:
        try:
            out.append(Path(f'/proc/{pid}/comm').read_text().strip())
        except OSError:
            out.append('')
    return out


def test_leftovers_are_found_by_run_id_and_ended_by_group(tmp_path):
    run_id = 'test-' + os.urandom(6).hex()
    env = dict(os.environ, **{runstate.RUN_ID: run_id})
    # A job as ReFrame starts it: a session of its own, a child, and SIGTERM ignored.
    job = subprocess.Popen(['bash', '-c', "trap '' TERM; sleep 300 & sleep 300; wait"],
                           env=env, start_new_session=True)
    other = subprocess.Popen(['sleep', '300'], start_new_session=True)     # not the run's
    try:
        # until both children have become sleep: a forked child is bash until its exec
        deadline = time.monotonic() + 10
        while _programs(runstate.processes_of(run_id)).count('sleep') < 2 and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        found = runstate.processes_of(run_id)
        assert job.pid in found and len(found) == 3
        ended = runstate.end_processes(run_id)
        assert len(ended) == 3 and any(name.startswith('sleep (') for name in ended)
        job.wait(timeout=10)
        assert not runstate.processes_of(run_id)
        assert _alive(other.pid)
    finally:
        for proc in (job, other):
            proc.kill()
            proc.wait()


def test_reframe_gets_default_signals_and_dies_with_commcheck(tmp_path):
    """A parent that ignores SIGINT and SIGHUP (a script's background job under nohup) starts
    the child as commcheck starts ReFrame; the child has neither ignored, and when the parent
    is killed outright the child gets SIGTERM."""
    pidfile = tmp_path / 'child'
    parent = subprocess.Popen([sys.executable, '-c', textwrap.dedent(f'''
        import os, signal, subprocess, sys, time
        from commcheck.cli import run
        parent, libc = os.getpid(), run._libc()
        child = subprocess.Popen(['sleep', '300'], start_new_session=True,
                                 preexec_fn=lambda: run._child_setup(parent, libc))
        open({str(pidfile)!r}, 'w').write(str(child.pid))
        time.sleep(300)''')], preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN)
                                                  for s in (signal.SIGINT, signal.SIGHUP)])
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.1)
        child = int(pidfile.read_text())
        assert _sig_ignored(parent.pid, signal.SIGINT)
        assert not _sig_ignored(child, signal.SIGINT) and not _sig_ignored(child, signal.SIGHUP)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child)
    finally:
        parent.kill()
        parent.wait()


def _db(path: Path, schema: str | None = '1.0', tables: bool = True) -> Path:
    conn = sqlite3.connect(path)
    if tables:
        conn.execute('CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
                     'session_end_unix REAL, json_blob TEXT, report_file TEXT)')
        conn.execute('CREATE TABLE testcases(name TEXT, system TEXT, partition TEXT, '
                     'environ TEXT, job_completion_time_unix REAL, session_uuid TEXT, uuid TEXT)')
    else:
        conn.execute('PRAGMA user_version = 7')
    if schema:
        conn.execute('CREATE TABLE metadata(schema_version TEXT)')
        conn.execute('INSERT INTO metadata VALUES (?)', (schema,))
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize('make,words', [
    (lambda p: p.write_bytes(b''), 'empty (0 bytes'),
    (lambda p: _db(p, schema=None, tables=False), 'holds no tables'),
    (lambda p: _db(p, schema='0.9'), 'schema 0.9, but this ReFrame writes schema 1.0'),
    (lambda p: p.write_bytes(b'SQLite format 3\x00' + b'\x07' * 4000), 'not a readable'),
    (lambda p: p.mkdir(), 'not a file'),
])
def test_every_database_that_would_lose_a_session_is_named(tmp_path, make, words):
    db = tmp_path / 'results.db'
    make(db)
    assert words in preflight.results_db_damage(db)


def test_a_sound_database_is_left_alone(tmp_path):
    db = _db(tmp_path / 'results.db')
    assert preflight.results_db_damage(db) is None
    assert preflight.protect_results_db(db) == [] and db.exists()


def test_a_state_or_reports_path_that_is_a_file_is_a_problem(tmp_path):
    (tmp_path / 'file').write_text('x')
    assert 'is not a directory' in preflight.problems(tmp_path / 'file', tmp_path / 's')[0]
    assert 'is not a directory' in preflight.problems(tmp_path / 'r', tmp_path / 'file')[0]
    assert preflight.problems(tmp_path / 'r', tmp_path / 's') == []
    (tmp_path / 'r').mkdir()
    (tmp_path / 'r' / 'perflogs').write_text('x')
    assert 'perflogs' in preflight.problems(tmp_path / 'r', tmp_path / 's')[0]


def test_reframe_output_is_judged():
    assert run_cli.NOT_STORED.search('WARNING: failed to store results in the database: '
                                     'database or disk is full').group(1) == \
        'database or disk is full'
    said = run_cli.ANSI.sub('', "\x1b[31mERROR: run session stopped: command line error: "
                                "argument to '--repeat' option must be a non-negative "
                                "integer\x1b[0m")
    assert run_cli.REFUSED.search(said).group(1).startswith("argument to '--repeat'")


def test_reframe_status_maps_to_the_contract():
    assert [run_cli.exit_code(s) for s in (0, 1, 2, 5, -15, -9)] == [0, 1, 4, 4, 143, 137]
