"""The readers on the shared store, against a real PostgreSQL server (tests/pgserver.py): the
same sessions pushed to the store (through ``pgstore.push``, the push path) and kept in a
ReFrame results database give the same baseline, verdicts, history and report; an unreachable
store is one line and exit 2; a reader sees whole sessions only, in one snapshot, while writers
write; ``commcheck sessions`` lists the clusters; a damaged stored record or value is named;
``archive`` moves sessions out of the store as its owner role only."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading

import pytest

from commcheck import cli, experiments, paths
from commcheck.results import history_gen, pgread, pgstore, sample_index, source, store
from tests.store import histories

READER, WRITER, OWNER = 'commcheck_reader', 'commcheck_writer', 'commcheck_owner'


def generate(path, n: int, **options):
    gen = history_gen.Generator(histories.source(), n, **options)
    history_gen.write_db(path, (gen.session(i) for i in range(n)))
    return gen


def push(server, db: str, spool, role: str = OWNER, site: str = 'testsite') -> list[str]:
    """Every session of ``spool`` into the store, through the push path."""
    out = pgstore.push(server.url(role, db), [pgstore.Spool(spool)], site, lambda _: None)
    return out.pushed


@pytest.fixture
def store_and_file(pg_store, tmp_path, monkeypatch):
    """(reader URL, results database): the same 8 sessions in both, an upgrade of MPICH
    planted at session 5."""
    server, db = pg_store
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    monkeypatch.delenv('COMMCHECK_HISTORY', raising=False)
    monkeypatch.delenv('COMMCHECK_SITE', raising=False)
    spool = tmp_path / 'results.db'
    change = history_gen.Change(at=5, environ='gnu-mpich4', field='mpi_version', before='',
                                after='4.1.6', factor=1.6)
    generate(spool, 8, repeat=3, changes=[change])
    assert len(push(server, db, spool)) == 8
    return server.url(READER, db), spool


def iso(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix).isoformat()


def run(*argv) -> int:
    """A command in this process; its exit code (argparse's refusals exit)."""
    try:
        return cli.main([str(a) for a in argv])
    except SystemExit as done:
        return int(done.code)


def test_every_reader_on_the_store_is_the_reader_on_the_file(store_and_file, tmp_path,
                                                             monkeypatch):
    url, spool = store_and_file
    sample_index.open_index(spool).close()      # compare's since-when reads an index that exists
    every = store.ResultsDB(spool).stored()
    got = {}
    for name, db in (('store', url), ('file', spool)):
        out = tmp_path / name
        out.mkdir()
        assert run('baseline', '--db', db, '--last', 3, '--until', iso(every[4].time_start),
                   '--refs', out / 'refs') == 0       # sessions 2-4, before the upgrade
        base = json.loads((out / 'refs' / 'local.baseline.json').read_text())
        base.pop('created')
        monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(out / 'refs'))
        code = run('compare', '--db', db, '--json', out / 'gate.json')
        gate = json.loads((out / 'gate.json').read_text())
        gate.pop('against')                     # the baseline file's path
        assert run('history', '--db', db, '--json', out / 'history.json') == 0
        assert run('report', '--db', db, '--out', out / 'report') == 0
        page = next((out / 'report').glob('*/data.json'))
        got[name] = (base, (out / 'refs' / 'local.yaml').read_text(), code, gate,
                     (out / 'history.json').read_text(),
                     json.loads(page.read_text())['sections'])
    assert got['store'] == got['file']
    code, gate = got['store'][2:4]
    regressed = [c for c in gate['comparisons'] if c['verdict'] in ('MPI regressed', 'regressed')]
    assert code == 1 and regressed                      # sessions 2-4 against 7
    assert all(c['since'] for c in regressed)           # "since when" read from the store
    assert json.loads(got['store'][4])['change_points']


def test_an_unreachable_store_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """Nothing listens there: every reader says so in one line (the address redacted), and
    compare gives no verdict; the same through COMMCHECK_HISTORY."""
    nowhere = f'postgresql://{READER}@/commcheck?host={tmp_path}&port=5999'
    monkeypatch.setenv('COMMCHECK_STATE', str(tmp_path / 'state'))
    for argv in (['compare', '--db', nowhere, '--json', tmp_path / 'gate.json'],
                 ['baseline', '--db', nowhere, '--last', '3', '--refs', tmp_path / 'refs'],
                 ['history', '--db', nowhere], ['sessions', '--db', nowhere],
                 ['report', '--db', nowhere, '--out', tmp_path / 'out']):
        assert run(*argv) == 2, argv
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith('ERROR: history unavailable: '), err
        assert 'Traceback' not in err[0]
    assert not (tmp_path / 'gate.json').exists()
    monkeypatch.setenv('COMMCHECK_HISTORY', nowhere)
    assert run('compare', '--json', tmp_path / 'gate.json') == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith('ERROR: history unavailable: '), err
    monkeypatch.setenv('COMMCHECK_HISTORY', nowhere.replace(READER, f'{READER}:hunter2'))
    assert run('history') == 2
    said = capsys.readouterr()
    assert 'hunter2' not in said.err + said.out and said.err.startswith('ERROR: ')


def whole(conn, uuids: list[str]) -> dict[str, tuple[int, int]]:
    """session -> (measurements its row says, measurement rows seen), through ``conn``."""
    rows = conn.execute(
        'SELECT s.uuid::text, s.measurements, (SELECT count(*) FROM commcheck.measurements m '
        'WHERE m.session = s.uuid) FROM commcheck.sessions s').fetchall()
    return {u: (n, seen) for u, n, seen in rows if not uuids or u in uuids}


def test_a_reader_sees_the_sessions_of_its_snapshot_whole(store_and_file, pg_store, tmp_path):
    """A reader opened before a push does not see the pushed session in any of its reads,
    nor through a worker's connection; one opened after sees it whole."""
    url, _ = store_and_file
    server, db = pg_store
    later = tmp_path / 'later.db'
    generate(later, 1, seed=99, repeat=3, changes=[])
    with source.open_history(url) as before:
        listed = [s.uuid for s in before.stored()]
        keys = before.series().keys()
        assert len(push(server, db, later, role=WRITER)) == 1
        assert [s.uuid for s in before.stored()] == listed
        with before.series().reopened() as worker:
            assert [s.uuid for s in worker.sessions()] == listed
            assert worker.keys() == keys
            assert {u for key, _ in keys[:5] for u, *_ in worker.launches(key)} <= set(listed)
    with source.open_history(url) as after:
        new = [s.uuid for s in after.stored() if s.uuid not in listed]
        assert len(new) == 1
        counts = whole(after.conn, new)
        assert counts[new[0]][0] == counts[new[0]][1] > 0


def test_readers_beside_concurrent_writers_see_whole_sessions_only(store_and_file, pg_store,
                                                                    tmp_path):
    """Four writer processes push sessions, each holding its transaction open a moment after
    its inserts; meanwhile readers list, count and run history: every session a reader sees
    has all its measurements, and history reads exactly the sessions it listed."""
    url, _ = store_and_file
    server, db = pg_store
    env = {**server.env(os.environ), 'COMMCHECK_TEST_PUSH_PAUSE': '0.3'}
    writers = []
    for w in range(4):
        spool = tmp_path / f'w{w}.db'
        generate(spool, 3, seed=100 + w, repeat=2, changes=[])
        writers.append(subprocess.Popen(
            [sys.executable, '-c', 'import sys; from commcheck.results import pgstore; '
             'pgstore.push(sys.argv[1], [pgstore.Spool(sys.argv[2])], "w", print)',
             server.url(WRITER, db), str(spool)], env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True))
    seen: list[int] = []
    failures: list[str] = []

    def read() -> None:
        while any(w.poll() is None for w in writers) or len(seen) < 3:
            with source.open_history(url) as history:
                listed = [s.uuid for s in history.stored()]
                for uuid, (n, rows) in whole(history.conn, []).items():
                    if n != rows:
                        failures.append(f'{uuid}: {rows} of {n} measurements')
                indexed = [s.uuid for s in history.series().sessions()]
                if indexed != listed:
                    failures.append(f'series {len(indexed)} != listing {len(listed)}')
                seen.append(len(listed))
    reader = threading.Thread(target=read)
    reader.start()
    for w in writers:
        assert w.wait(timeout=300) == 0, w.stderr.read()
    reader.join(timeout=300)
    assert not failures, failures[:5]
    assert seen == sorted(seen) and seen[-1] == 8 + 12       # only ever more, whole sessions


def test_sessions_lists_the_clusters_and_the_gate_compares_a_cluster_with_itself(
        pg_store, tmp_path, monkeypatch, capsys):
    server, db = pg_store
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    for i, cluster in enumerate(('alps', 'eiger')):
        spool = tmp_path / f'{cluster}.db'
        generate(spool, 4 + i, seed=i, repeat=2, cluster=cluster, changes=[])
        push(server, db, spool, site='cscs')
    url = server.url(READER, db)
    assert run('sessions', '--db', url, '--json', tmp_path / 's.json') == 0
    out = capsys.readouterr().out
    assert 'cluster alps: 4 session(s)' in out and 'cluster eiger: 5 session(s)' in out
    assert 'eiger-login' in out and 'cscs' in out
    listed = json.loads((tmp_path / 's.json').read_text())
    assert sorted({r['cluster'] for r in listed}) == ['alps', 'eiger'] and len(listed) == 9
    assert run('sessions', '--db', url, '--cluster', 'alps', '--json', tmp_path / 'a.json') == 0
    alps = [r['uuid'] for r in json.loads((tmp_path / 'a.json').read_text())]
    assert len(alps) == 4
    # baseline --last 3 of one cluster: its last three sessions, never the other's
    refs = tmp_path / 'refs'
    assert run('baseline', '--db', url, '--cluster', 'alps', '--last', '3', '--refs', refs) == 0
    assert json.loads((refs / 'alps.baseline.json').read_text())['sessions'] == alps[-3:]
    assert run('history', '--db', url, '--cluster', 'eiger', '--json', tmp_path / 'h.json') == 0
    assert len(json.loads((tmp_path / 'h.json').read_text())['sessions']) == 5
    assert run('compare', '--db', url, '--cluster', 'eiger', '--baseline-session', alps[0],
               '--json', tmp_path / 'g.json') == 2
    err = capsys.readouterr().err
    assert 'gate compares a cluster with itself' in err and not (tmp_path / 'g.json').exists()
    assert run('compare', '--db', url, '--cluster', 'eiger', '--baseline',
               refs / 'alps.baseline.json', '--json', tmp_path / 'g.json') == 2
    err = capsys.readouterr().err
    assert 'a baseline of cluster alps' in err and not (tmp_path / 'g.json').exists()
    # the same listing from a results database
    assert run('sessions', '--db', tmp_path / 'eiger.db', '--clusters') == 0
    out = capsys.readouterr().out
    assert 'cluster eiger: 5 session(s)' in out and 'host(s) eiger-login' in out


def test_a_damaged_stored_record_or_value_is_named(store_and_file, pg_store, tmp_path,
                                                   capsys):
    url, spool = store_and_file
    server, db = pg_store
    uuids = [s.uuid for s in store.ResultsDB(spool).stored()]
    with server.connect(OWNER, db) as conn:
        conn.execute("UPDATE commcheck.sessions SET record = '{\"session_info\": ' "
                     "WHERE uuid = %s", (uuids[-1],))
        conn.execute("UPDATE commcheck.measurements SET value = 'NaN' WHERE session = %s",
                     (uuids[2],))
    assert run('compare', '--db', url, '--session', uuids[-1][:8],
               '--json', tmp_path / 'g.json') == 2
    err = capsys.readouterr().err.splitlines()
    assert 'Traceback' not in '\n'.join(err)
    assert [line for line in err if uuids[-1] in line and 'unreadable' in line], err
    assert err[-1].startswith('ERROR: ') and 'no readable stored session' in err[-1]
    # history reads the series in forked workers: their warnings reach the command's stderr,
    # which only a process of its own shows whole (capsys holds the parent's alone)
    done = subprocess.run([sys.executable, '-m', 'commcheck.cli', 'history', '--db', url,
                           '--json', str(tmp_path / 'h.json')], env=server.env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f'session {uuids[2]}' in done.stderr and 'not a finite value' in done.stderr
    series = json.loads((tmp_path / 'h.json').read_text())['series']
    assert all(p['session'] != uuids[2] for s in series for p in s['points'])


def test_archive_moves_sessions_out_of_the_store_as_its_owner_only(store_and_file, pg_store,
                                                                   tmp_path, capsys):
    url, spool = store_and_file
    server, db = pg_store
    every = store.ResultsDB(spool).stored()
    cut = every[3].time_start
    into = tmp_path / 'archive.db'
    when = iso(cut)
    assert run('archive', '--db', url, '--before', when, '--into', into) == 2
    assert 'owner role' in capsys.readouterr().err and not into.exists()
    assert run('archive', '--db', server.url(OWNER, db), '--before', when, '--into', into) == 0
    assert 'moved 3 session(s)' in capsys.readouterr().out
    kept = store.ResultsDB(into)
    assert [s.uuid for s in kept.stored()] == [s.uuid for s in every[:3]]
    assert [b for _, b in kept.records([every[0].uuid])] == [
        b for _, b in store.ResultsDB(spool).records([every[0].uuid])]     # byte for byte
    with source.open_history(url) as left:
        assert [s.uuid for s in left.stored()] == [s.uuid for s in every[3:]]
        assert whole(left.conn, [s.uuid for s in every[:3]]) == {}   # measurements gone too
    assert run('history', '--db', into, '--json', tmp_path / 'h.json') == 0   # reads as a file


def test_a_store_without_its_tables_is_refused_in_one_line(pg_store, monkeypatch):
    server, db = pg_store
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    with pytest.raises(source.HistoryUnavailable,
                       match='has schema commcheck but no tables yet: run `commcheck push --init`'):
        pgread.StoreHistory(server.url(READER, db))


def test_a_store_lost_in_the_middle_of_a_read_is_one_line(store_and_file, pg_store):
    """The reader's connection cut by the server (as a restart or a failover would): the next
    read raises "history unavailable", it never returns what was read before as a whole."""
    url, _ = store_and_file
    server, db = pg_store
    with source.open_history(url) as history:
        keys = history.series().keys()
        with server.connect() as admin:
            cut = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                "application_name = 'commcheck read' AND datname = %s",
                                (db,)).fetchall()
        assert cut == [(True,)]
        with pytest.raises(source.HistoryUnavailable) as lost:
            history.series().launches(keys[0][0])
    assert str(lost.value).startswith('history unavailable: ') and '\n' not in str(lost.value)


def test_readers_read_the_store_the_site_file_names(store_and_file, tmp_path, monkeypatch,
                                                    capsys):
    """No --db: the store of COMMCHECK_HISTORY, else of the site file's history:."""
    url, spool = store_and_file
    site = tmp_path / 'mysite.yaml'
    example = paths.CONFIG_DIR / 'sites' / 'example-slurm.yaml'
    site.write_text(example.read_text() + f'history: {url}\n')
    monkeypatch.setenv('COMMCHECK_SITE', str(site))
    assert run('sessions', '--clusters') == 0
    assert capsys.readouterr().out.startswith(f'{url}: 8 session(s) on 1 cluster(s)')
    monkeypatch.setenv('COMMCHECK_HISTORY', url)
    assert run('history', '--last', '2', '--json', tmp_path / 'h.json') == 0
    assert json.loads((tmp_path / 'h.json').read_text())['sessions'] == [
        s.uuid for s in store.ResultsDB(spool).stored()[-2:]]


def test_rows_pushed_before_the_units_read_in_todays(store_and_file, pg_store):
    """The stored sessions were recorded without the units of their counts and shares (the
    stencil's ``halo_share`` ...); a commcheck before those units pushed them so
    (``unit = ''``): the store reads them in today's, as the file does."""
    url, _ = store_and_file
    server, db = pg_store
    named = sorted(experiments.UNITS)
    with server.connect(OWNER, db) as conn:
        assert conn.execute("UPDATE commcheck.measurements SET unit = '' WHERE variable = "
                            "ANY(%s)", (named,)).rowcount > 0
    with source.open_history(url) as history:
        keys = [(k, u) for k, u in history.series().keys() if k.variable in named]
        assert keys and all(u == experiments.UNITS[k.variable] for k, u in keys)
        assert {u for _, _, u, _ in history.series().launches(keys[0][0])} == {keys[0][1]}
