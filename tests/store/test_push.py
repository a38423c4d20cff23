"""``commcheck push`` into a real PostgreSQL server (tests/pgserver.py), as real processes:
concurrent writers, idempotence, the store stopped and restarted, a writer killed inside its
transaction, schema races, refusals (newer schema, wrong password, a password in the address,
a bad source file), least privilege, and no password in any output or process line."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from commcheck.results import pgstore, store
from tests.conftest import commcheck_cmd
from tests.store import histories


def env_for(server, db: str, role: str, tmp_path, **extra) -> dict:
    env = server.env(os.environ)
    env.update(COMMCHECK_HISTORY=server.url(role, db), COMMCHECK_REPORTS=str(tmp_path / 'reports'),
               COMMCHECK_STATE=str(tmp_path / 'state'), **extra)
    env.pop('COMMCHECK_SITE', None)
    return env


def push(env: dict, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([commcheck_cmd(), 'push', *map(str, args)], env=env, text=True,
                          capture_output=True, timeout=timeout)


def init(server, db: str) -> None:
    with server.connect('commcheck_owner', db) as conn:
        pgstore.ensure_schema(conn, server.url('commcheck_owner', db))


def counts(server, db: str) -> tuple[int, int]:
    with server.connect('commcheck_reader', db) as conn:
        return (conn.execute('SELECT count(*) FROM commcheck.sessions').fetchone()[0],
                conn.execute('SELECT count(*) FROM commcheck.measurements').fetchone()[0])


def test_push_lands_each_session_once_and_a_second_push_is_a_no_op(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    reports = histories.sessions(3, seed=1)
    spool = histories.results_db(tmp_path / 'reports' / 'results.db', reports)
    env = env_for(server, db, 'commcheck_writer', tmp_path)
    first = push(env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count('pushed ') == 3 and 'already in the store:' not in first.stdout
    assert counts(server, db) == (3, sum(map(histories.measurement_count, reports)))
    again = push(env)
    assert again.returncode == 0, again.stderr
    assert 'already in the store: 3 sessions' in again.stdout
    assert '0 pushed, 3 already in the store' in again.stdout
    one = push(env, histories.report_file(tmp_path / 'r.json', reports[0]))
    assert one.returncode == 0 and f'already in the store: {reports[0]["session_info"]["uuid"]}' \
        in one.stdout
    assert counts(server, db)[0] == 3
    assert spool.exists()


def test_a_run_report_is_pushed_with_its_record_exact(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    report = histories.sessions(1, seed=2)[0]
    path = histories.report_file(tmp_path / 'run-report-0.json', report)
    done = push(env_for(server, db, 'commcheck_writer', tmp_path), path)
    assert done.returncode == 0, done.stderr
    with server.connect('commcheck_reader', db) as conn:
        row = conn.execute('SELECT record, source, cluster, host, site, measurements '
                           'FROM commcheck.sessions').fetchone()
    assert row[0] == path.read_text() and row[1] == 'run report'
    assert row[2:5] == ('local', report['session_info']['hostname'], 'local')
    assert row[5] == histories.measurement_count(report)


def test_sixteen_writers_at_once_land_every_session_once(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    procs, expected = [], 0
    for w in range(16):
        reports = histories.sessions(10, seed=100 + w, start=1.8e9 + w * 3600)
        expected += sum(map(histories.measurement_count, reports))
        spool = histories.results_db(tmp_path / f'w{w}' / 'results.db', reports)
        env = env_for(server, db, 'commcheck_writer', tmp_path / f'w{w}')
        procs.append(subprocess.Popen([commcheck_cmd(), 'push', str(spool)], env=env,
                                      text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outs = [(p.communicate(timeout=240), p.returncode) for p in procs]
    for (out, err), code in outs:
        assert code == 0, err
        assert 'lock' not in (out + err).lower() and err == ''
        assert out.count('pushed ') == 10
    assert counts(server, db) == (160, expected)
    with server.connect('commcheck_reader', db) as conn:
        dupes = conn.execute(
            'SELECT count(*) FROM (SELECT 1 FROM commcheck.measurements GROUP BY session, '
            'cluster, partition, environ, test, variable, launch HAVING count(*) > 1) d'
            ).fetchone()[0]
        per_session = conn.execute('SELECT count(*) FROM commcheck.sessions s WHERE '
                                   'measurements <> (SELECT count(*) FROM commcheck.measurements'
                                   ' m WHERE m.session = s.uuid)').fetchone()[0]
        provs = conn.execute('SELECT count(*), count(DISTINCT provenance) '
                             'FROM commcheck.provenances').fetchone()
    assert dupes == 0 and per_session == 0 and provs[0] == provs[1]


def stored_values(server, db: str) -> dict:
    with server.connect('commcheck_reader', db) as conn:
        rows = conn.execute('SELECT session::text, cluster, partition, environ, test, variable, '
                            'launch, value, unit, time_unix FROM commcheck.measurements')
        return {r[:7]: r[7:] for r in rows}


def local_values(spool) -> dict:
    from commcheck.results.sample_index import numbered
    out = {}
    for session in store.read_db(spool):
        for launch, s in numbered(session.samples):
            out[(s.session, *s.key, launch)] = (s.value, s.unit, s.time)
    return out


def test_store_stopped_then_restarted_lands_what_waits_byte_identical(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    reports = histories.sessions(3, seed=3)
    spool = tmp_path / 'reports' / 'results.db'
    histories.results_db(spool, reports[:1])
    env = env_for(server, db, 'commcheck_writer', tmp_path)
    assert push(env).returncode == 0
    histories.results_db(spool, reports[1:])
    server.stop('fast')
    try:
        down = push(env)
    finally:
        server.start()
    assert down.returncode == 3, down.stderr
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR: history store unavailable: ')
    assert lines[0].endswith(f'; 2 sessions wait in {spool}') and 'Traceback' not in down.stderr
    back = push(env)
    assert back.returncode == 0, back.stderr
    assert back.stdout.count('pushed ') == 2
    stored, local = stored_values(server, db), local_values(spool)
    assert stored.keys() == local.keys() and len(stored) == counts(server, db)[1]
    assert all(float(stored[k][0]).hex() == float(local[k][0]).hex() and
               stored[k][1:] == local[k][1:] for k in local)
    with server.connect('commcheck_reader', db) as conn:
        records = dict(conn.execute('SELECT uuid::text, record FROM commcheck.sessions'))
    assert records == dict(store.ResultsDB(spool).records(list(records)))


def _in_transaction(server, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    with server.connect() as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                            "'commcheck push' AND state = 'idle in transaction'").fetchone()[0]:
                return True
            time.sleep(0.1)
    return False


def paused_push(env: dict, pause: str) -> subprocess.Popen:
    """``commcheck push``, held ``pause`` seconds inside its transaction (pgstore.PAUSE_ENV)."""
    return subprocess.Popen([commcheck_cmd(), 'push'], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**env, pgstore.PAUSE_ENV: pause})


@contextlib.contextmanager
def paused_in_its_transaction(server, env: dict, pause: str) -> Iterator[subprocess.Popen]:
    """A :func:`paused_push`, given once it waits inside its transaction; killed after."""
    proc = paused_push(env, pause)
    try:
        assert _in_transaction(server), 'the push never reached its pause'
        yield proc
    finally:
        proc.kill()


def one_session_waits(server, db: str, tmp_path, seed: int) -> tuple[dict, Path, dict]:
    """The store made and one session (of ``seed``) in the local results database: its run
    report, that database, and a writer's environment."""
    init(server, db)
    report = histories.sessions(1, seed=seed)[0]
    spool = histories.results_db(tmp_path / 'reports' / 'results.db', [report])
    return report, spool, env_for(server, db, 'commcheck_writer', tmp_path)


def assert_the_next_push_lands_it(server, db: str, env: dict, report: dict) -> None:
    """Nothing of the interrupted push is in the store; the next push stores the session
    whole."""
    assert counts(server, db) == (0, 0)
    done = push(env)
    assert done.returncode == 0 and 'pushed ' in done.stdout, done.stderr
    assert counts(server, db) == (1, histories.measurement_count(report))


def test_a_writer_killed_in_its_transaction_leaves_nothing_and_the_next_push_completes(
        pg_store, tmp_path):
    server, db = pg_store
    report, spool, env = one_session_waits(server, db, tmp_path, seed=4)
    with paused_in_its_transaction(server, env, '120') as proc:
        with server.connect('commcheck_reader', db) as conn:   # the rows are written, unseen
            assert conn.execute('SELECT count(*) FROM commcheck.sessions').fetchone()[0] == 0
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert_the_next_push_lands_it(server, db, env, report)
    assert spool.exists()


def test_first_runs_at_once_all_create_the_schema(pg_store, tmp_path):
    server, db = pg_store
    env = env_for(server, db, 'commcheck_owner', tmp_path)
    procs = [subprocess.Popen([commcheck_cmd(), 'push', '--init'], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [(p.communicate(timeout=120), p.returncode) for p in procs]
    assert [code for _, code in outs] == [0, 0, 0, 0], outs
    said = sorted(out.strip().rsplit('(', 1)[-1] for (out, _), _ in outs)
    assert said == ['created)', 'up to date)', 'up to date)', 'up to date)']
    with server.connect('commcheck_reader', db) as conn:
        assert pgstore.schema_version(conn) == pgstore.SCHEMA_VERSION


def test_a_newer_schema_is_refused_in_one_line(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    with server.connect('commcheck_owner', db) as conn:
        conn.execute("UPDATE commcheck.meta SET value = '99' WHERE name = 'schema_version'")
    histories.results_db(tmp_path / 'reports' / 'results.db', histories.sessions(1, seed=5))
    done = push(env_for(server, db, 'commcheck_writer', tmp_path))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and 'schema version 99, newer than' in lines[0], done.stderr
    assert 'upgrade commcheck' in lines[0]


def test_a_writer_cannot_create_the_schema_and_is_told_who_can(pg_store, tmp_path):
    server, db = pg_store
    histories.results_db(tmp_path / 'reports' / 'results.db', histories.sessions(1, seed=6))
    done = push(env_for(server, db, 'commcheck_writer', tmp_path))
    assert done.returncode == 2
    assert done.stderr.count('\n') == 1, done.stderr
    assert done.stderr.rstrip().endswith('run `commcheck push --init` as commcheck_owner, the '
                                         "store's owner role")


def test_a_wrong_password_is_refused_not_spooled(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    histories.results_db(tmp_path / 'reports' / 'results.db', histories.sessions(1, seed=7))
    wrong = tmp_path / 'pgpass'
    wrong.write_text('*:*:*:commcheck_writer:not-the-password\n')
    wrong.chmod(0o600)
    done = push(env_for(server, db, 'commcheck_writer', tmp_path, PGPASSFILE=str(wrong)))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and 'password authentication failed' in lines[0]
    assert 'wait' not in lines[0] and 'not-the-password' not in done.stderr


def test_a_password_in_the_address_is_refused_and_not_printed(pg_store, tmp_path):
    server, db = pg_store
    secret = server.passwords['commcheck_writer']
    env = env_for(server, db, 'commcheck_writer', tmp_path)
    env['COMMCHECK_HISTORY'] = env['COMMCHECK_HISTORY'].replace(
        'commcheck_writer@', f'commcheck_writer:{secret}@')
    done = push(env)
    assert done.returncode == 2
    assert done.stderr.startswith('ERROR: COMMCHECK_HISTORY: the history store address ')
    assert 'PGPASSFILE' in done.stderr and secret not in done.stdout + done.stderr


@pytest.mark.parametrize('content', [b'not json at all', b'{"runs": []}', None,
                                     b'SQLite format 3\x00garbage'])
def test_a_bad_source_is_one_line_naming_it(pg_store, tmp_path, content):
    server, db = pg_store
    bad = tmp_path / 'bad.json'
    if content is not None:
        bad.write_bytes(content)
    done = push(env_for(server, db, 'commcheck_writer', tmp_path), bad)
    assert done.returncode == 2 and done.stdout == ''
    assert done.stderr.startswith('ERROR: ') and str(bad) in done.stderr
    assert done.stderr.count('\n') == 1 and 'Traceback' not in done.stderr


def test_the_writer_can_neither_delete_nor_change_and_the_reader_only_reads(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    histories.results_db(tmp_path / 'reports' / 'results.db', histories.sessions(1, seed=8))
    assert push(env_for(server, db, 'commcheck_writer', tmp_path)).returncode == 0
    with server.connect('commcheck_writer', db) as conn:
        for statement in ('DELETE FROM commcheck.sessions', 'DELETE FROM commcheck.measurements',
                          "UPDATE commcheck.sessions SET site = 'x'",
                          'TRUNCATE commcheck.sessions CASCADE', 'DROP TABLE commcheck.meta'):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)
    with server.connect('commcheck_reader', db) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO commcheck.meta VALUES ('x', 'y')")
    with server.connect('commcheck_owner', db) as conn:    # archive runs as the owner
        assert conn.execute('DELETE FROM commcheck.sessions').rowcount == 1
    assert counts(server, db) == (0, 0)


def test_no_password_in_any_output_or_process_line(pg_store, tmp_path):
    server, db = pg_store
    said = []
    owner = push(env_for(server, db, 'commcheck_owner', tmp_path), '--init')
    said += [owner.stdout, owner.stderr]
    histories.results_db(tmp_path / 'reports' / 'results.db', histories.sessions(2, seed=9))
    env = env_for(server, db, 'commcheck_writer', tmp_path)
    proc = paused_push(env, '3')
    assert _in_transaction(server)
    ps = subprocess.run(['ps', '-eww', '-o', 'pid,args'], capture_output=True, text=True).stdout
    said += [ps, *proc.communicate(timeout=60)]
    assert proc.returncode == 0
    for args in (['--init'], []):
        done = push(env, *args)
        said += [done.stdout, done.stderr]
    said += [p.read_text(errors='replace') for p in (tmp_path / 'reports').rglob('*')
             if p.is_file() and p.suffix != '.db']
    assert 'commcheck push' in ps and any('pushed ' in s for s in said)
    for role, secret in server.passwords.items():
        assert not [s for s in said if secret in s], role


def with_floors(report: dict) -> dict:
    """A floor beside each PingPong latency (the fixture predates floors), as a launch
    records it: ``floor_latency_8B`` at a third of the launch's latency."""
    for case in report['runs'][0]['testcases']:
        perf = case.get('perfvalues') or {}
        for name, entry in list(perf.items()):
            if name.endswith(':latency_8B'):
                perf[name.replace('latency_8B', 'floor_latency_8B')] = [entry[0] / 3,
                                                                         *entry[1:]]
    return report


def test_the_dashboard_queries_of_the_docs_give_each_sessions_median(pg_store, tmp_path):
    import re
    import statistics

    from tests.conftest import REPO
    server, db = pg_store
    init(server, db)
    reports = [with_floors(r) for r in histories.sessions(3, seed=10, repeat=3)]
    spool = histories.results_db(tmp_path / 'reports' / 'results.db', reports)
    assert push(env_for(server, db, 'commcheck_writer', tmp_path)).returncode == 0
    want: dict = {}
    for session in store.read_db(spool):
        for s in session.samples:
            if (s.system, s.test, s.variable) == ('local', 'PingPong %lang=c', 'latency_8B'):
                want.setdefault((session.uuid, s.environ), []).append(s.value)
    text = (REPO / 'docs' / 'shared-history.md').read_text()
    queries = re.findall(r'```sql\n(.*?)```', text, re.S)
    assert len(queries) == 2
    with server.connect('commcheck_reader', db) as conn:
        panel = conn.execute(queries[0]).fetchall()
        floors = conn.execute(queries[1]).fetchall()
    assert len(panel) == len(want) == 6 and all(row[6] == 3 for row in panel)
    medians = sorted(statistics.median(v) for v in want.values())
    assert sorted(row[3] for row in panel) == pytest.approx(medians, rel=1e-12)
    assert all(row[4] <= row[3] <= row[5] for row in panel)
    assert len(floors) == 6 and all(row[2] == pytest.approx(3.0) for row in floors)


def test_a_record_that_does_not_decode_is_stored_with_its_problem_and_no_rows(pg_store,
                                                                              tmp_path):
    import sqlite3
    server, db = pg_store
    init(server, db)
    reports = histories.sessions(2, seed=11)
    spool = histories.results_db(tmp_path / 'reports' / 'results.db', reports)
    damaged = reports[1]['session_info']['uuid']
    with sqlite3.connect(spool) as conn:
        conn.execute("UPDATE sessions SET json_blob = '{\"runs\": ' WHERE uuid = ?", (damaged,))
    done = push(env_for(server, db, 'commcheck_writer', tmp_path))
    assert done.returncode == 0 and done.stdout.count('pushed ') == 2, done.stderr
    with server.connect('commcheck_reader', db) as conn:
        row = conn.execute('SELECT problem, measurements, record, cluster FROM '
                           'commcheck.sessions WHERE uuid = %s', (damaged,)).fetchone()
        rows = conn.execute('SELECT count(*) FROM commcheck.measurements WHERE session = %s',
                            (damaged,)).fetchone()[0]
    assert 'unreadable' in row[0] and row[1:] == (0, '{"runs": ', '') and rows == 0


@pytest.mark.parametrize('case', ['up', 'down', 'wrong password'])
def test_run_pushes_at_its_end_in_one_line_whatever_the_store_does(pg_store, tmp_path,
                                                                   monkeypatch, capsys, case):
    from commcheck import paths
    from commcheck.cli import push as push_cli
    server, db = pg_store
    init(server, db)
    spool = histories.results_db(tmp_path / 'results.db', histories.sessions(2, seed=12))
    monkeypatch.setattr(paths, 'RESULTS_DB', spool)
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    if case == 'wrong password':
        wrong = tmp_path / 'pgpass'
        wrong.write_text('*:*:*:commcheck_writer:wrong\n')
        wrong.chmod(0o600)
        monkeypatch.setenv('PGPASSFILE', str(wrong))
    if case == 'down':
        server.stop('fast')
    try:
        push_cli.after_run(server.url('commcheck_writer', db), 'local')
    finally:
        if case == 'down':
            server.start()
    out, err = capsys.readouterr()
    said = (out + err).strip().splitlines()
    assert len(said) == 1, said
    assert said[0].startswith({
        'up': 'commcheck: history store postgresql://commcheck_writer@',
        'down': 'commcheck: history store unavailable: ',
        'wrong password': 'commcheck: not pushed to the history store: history store '}[case])
    assert ('2 session(s) pushed' in said[0]) == (case == 'up')
    assert (f'2 sessions wait in {spool}' in said[0]) == (case == 'down')
    assert ('password authentication failed' in said[0]) == (case == 'wrong password')


def test_the_store_stopped_inside_a_push_is_unavailable_and_the_next_push_lands_it(
        pg_store, tmp_path):
    server, db = pg_store
    report, spool, env = one_session_waits(server, db, tmp_path, seed=13)
    try:
        with paused_in_its_transaction(server, env, '5') as proc:
            server.stop('fast')         # the server ends the push's session mid-transaction
            out, err = proc.communicate(timeout=60)
    finally:
        server.start()
    assert proc.returncode == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR: history store unavailable: ')
    assert lines[0].endswith(f'; 1 session waits in {spool}')
    assert_the_next_push_lands_it(server, db, env, report)


def test_the_same_sessions_pushed_by_four_writers_at_once_land_once(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    reports = histories.sessions(5, seed=14)
    spool = histories.results_db(tmp_path / 'results.db', reports)
    procs = []
    for w in range(4):
        env = env_for(server, db, 'commcheck_writer', tmp_path / f'w{w}')
        procs.append(subprocess.Popen([commcheck_cmd(), 'push', str(spool)], env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    outs = [(p.communicate(timeout=240), p.returncode) for p in procs]
    assert [code for _, code in outs] == [0] * 4, outs
    landed = sum(line.startswith('pushed ') for (out, _), _ in outs for line in out.splitlines())
    assert landed == 5, outs
    assert counts(server, db) == (5, sum(map(histories.measurement_count, reports)))
