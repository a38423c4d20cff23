"""The data path over stored sessions: selective reads of ReFrame's results database, the
derived sample index (built, updated, noticed stale, set aside when damaged, consistent when a
build is killed), the history generator and the change points it plants.

The histories are made by :mod:`commcheck.results.history_gen` from a real session (the report
tests' ``session-main`` fixture, a ``make run`` of both Debian stacks) into a real SQLite
database with ReFrame's schema."""

from __future__ import annotations

import datetime
import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from commcheck import cli
from commcheck.analysis import trend
from commcheck.cli import selection
from commcheck.results import history_gen, preflight, sample_index, store

SOURCE = Path(__file__).parents[1] / 'report' / 'fixtures' / 'session-main.json.gz'


@pytest.fixture(scope='module')
def report() -> dict:
    return history_gen.source_report(SOURCE)


def make(tmp_path: Path, report: dict, n: int, **options) -> tuple[Path, history_gen.Generator]:
    db = tmp_path / 'results.db'
    return db, history_gen.generate(report, n, db, **options)


def pids_of_calls(monkeypatch, path: Path, module, name: str) -> Path:
    """Wraps ``module.name`` so that each call appends its process id to ``path``: where the
    work ran (this process, or forked workers)."""
    real = getattr(module, name)

    def wrapper(*args):
        with path.open('a') as f:
            f.write(f'{os.getpid()}\n')
        return real(*args)
    monkeypatch.setattr(module, name, wrapper)
    path.write_text('')
    return path


def by_key(sessions: list[store.Session]) -> dict[tuple, list[store.Sample]]:
    out: dict[tuple, list[store.Sample]] = {}
    for sess in sessions:
        for s in sess.samples:
            out.setdefault(s.key, []).append(s)
    return out


def measured(samples: list[store.Sample]) -> list[tuple]:
    """What the index's ``launches`` gives of these samples (in session order): per session,
    the values, first unit and provenances of the launches not oversubscribed, value > 0."""
    out: list[tuple] = []
    for s in samples:
        if s.oversubscribed or s.value <= 0:
            continue
        if not out or out[-1][0] != s.session:
            out.append((s.session, [], s.unit, []))
        out[-1][1].append(s.value)
        out[-1][3].append(s.provenance)
    return out


def assert_index_is_full_read(index: sample_index.SampleIndex, db: Path) -> None:
    full = by_key(store.read_db(db, lambda m: None))
    keys = {key for key, _ in index.keys()}
    assert keys == set(full)
    for key in keys:
        assert index.launches(key) == measured(full[key]), key
    assert [s.uuid for s in index.sessions()] == [s.uuid for s in store.read_db(db)]


def test_generated_history_is_a_reframe_database(tmp_path, report):
    db, gen = make(tmp_path, report, 6, repeat=3)
    conn = sqlite3.connect(db)
    assert conn.execute('SELECT schema_version FROM metadata').fetchall() == [('1.0',)]
    starts = [t for t, in conn.execute('SELECT session_start_unix FROM sessions '
                                       'ORDER BY session_start_unix')]
    assert [b - a for a, b in zip(starts, starts[1:])] == [history_gen.DAY] * 5
    cases = conn.execute('SELECT count(*), count(DISTINCT uuid) FROM testcases').fetchone()
    conn.close()
    sessions = store.read_db(db)
    assert len({s.uuid for s in sessions}) == 6
    assert cases[0] == cases[1] == sum(len(s.cases) for s in sessions)
    launches = by_key(sessions)
    key = next(k for k in launches if k[3].startswith('PingPong') and k[4] == 'latency_8B')
    assert len(launches[key]) == 6 * 3            # --repeat 3: three launches a session
    assert len({s.value for s in launches[key]}) == 18   # each launch its own noise


def test_selective_reads_decode_only_what_is_asked(tmp_path, report, monkeypatch):
    db, _ = make(tmp_path, report, 8)
    every = store.read_db(db)
    decoded = []
    real = store.decode_record
    monkeypatch.setattr(store, 'decode_record',
                        lambda blob, where, *a: decoded.append(where) or real(blob, where, *a))
    results = store.ResultsDB(db)

    def read(**selection) -> list[store.Session]:
        return results.load(results.choose(**selection), store.warn_stderr)

    last = read(last=3)
    assert [s.uuid for s in last] == [s.uuid for s in every[-3:]] and len(decoded) == 3
    decoded.clear()
    mid = every[4]
    chosen = read(since=every[2].time_start, until=mid.time_start)
    assert [s.uuid for s in chosen] == [s.uuid for s in every[2:5]] and len(decoded) == 3
    decoded.clear()
    assert [s.uuid for s in read(uuids=[mid.uuid[:8]])] == [mid.uuid]
    assert len(decoded) == 1
    assert store.ResultsDB(db).choose(since=every[-1].time_start + 1) == []
    with pytest.raises(store.HistoryError, match='no stored session'):
        store.ResultsDB(db).resolve('zzzz')
    with pytest.raises(store.HistoryError, match='ambiguous'):
        store.ResultsDB(db).resolve('')


def test_index_gives_what_the_full_read_gives(tmp_path, report):
    db, _ = make(tmp_path, report, 5, repeat=2)
    index = sample_index.open_index(db)
    try:
        assert index.path == tmp_path / 'results.index.db'
        assert_index_is_full_read(index, db)
    finally:
        index.close()


def test_index_follows_the_database(tmp_path, report):
    """Sessions stored later are added; sessions deleted (as ``reframe
    --delete-stored-sessions`` does) are dropped; nothing else is re-read."""
    db, gen = make(tmp_path, report, 4)
    sample_index.open_index(db).close()
    history_gen.write_db(db, [gen.session(i) for i in (4, 5, 6)])
    index = sample_index.open_index(db)
    assert index.update() == {'added': 0, 'dropped': 0}
    assert len(index.sessions()) == 7
    index.close()
    doomed = [s.uuid for s in store.read_db(db)[:2]]
    with sqlite3.connect(db) as conn:
        conn.execute('PRAGMA foreign_keys = ON')
        conn.executemany('DELETE FROM sessions WHERE uuid = ?', [(u,) for u in doomed])
    index = sample_index.open_index(db)
    try:
        assert {s.uuid for s in index.sessions()}.isdisjoint(doomed)
        assert_index_is_full_read(index, db)
    finally:
        index.close()


def test_a_damaged_index_is_set_aside_and_rebuilt(tmp_path, report):
    db, _ = make(tmp_path, report, 3)
    path = sample_index.index_path(db)
    sample_index.open_index(db).close()
    data = path.read_bytes()
    damaged = data[:4096] + b'\x13' * 8192 + data[4096 + 8192:]
    path.write_bytes(damaged)
    warned = []
    index = sample_index.open_index(db, warned.append)
    try:
        assert_index_is_full_read(index, db)
    finally:
        index.close()
    aside = list(tmp_path.glob('results.index.db.damaged-*'))
    assert len(aside) == 1 and aside[0].read_bytes() == damaged      # kept intact
    assert any('moved aside to' in w and aside[0].name in w for w in warned)
    assert db.exists() and preflight.results_db_damage(db) is None   # the record untouched


def test_garbage_instead_of_an_index_is_set_aside(tmp_path, report):
    db, _ = make(tmp_path, report, 2)
    sample_index.index_path(db).write_bytes(b'not sqlite at all\n' * 100)
    warned = []
    sample_index.open_index(db, warned.append).close()
    assert [p.read_bytes()[:17] for p in tmp_path.glob('*.damaged-*')] == [b'not sqlite at all']
    assert len(warned) == 1 and 'rebuilt from' in warned[0]


def test_an_index_of_another_format_is_rebuilt(tmp_path, report):
    db, _ = make(tmp_path, report, 2)
    sample_index.open_index(db).close()
    with sqlite3.connect(sample_index.index_path(db)) as conn:
        conn.execute("UPDATE meta SET value = '0' WHERE name = 'format'")
    warned = []
    index = sample_index.open_index(db, warned.append)
    try:
        assert_index_is_full_read(index, db)
    finally:
        index.close()
    assert any("another format" in w for w in warned), warned


def test_a_killed_build_leaves_a_consistent_index(tmp_path, report, monkeypatch):
    db, _ = make(tmp_path, report, 5)
    real, calls = sample_index.SampleIndex._rows, []

    def dies_on_the_third(self, sid, session):
        calls.append(sid)
        if len(calls) == 3:
            raise KeyboardInterrupt          # killed in the middle of a session
        return real(self, sid, session)

    monkeypatch.setattr(sample_index.SampleIndex, '_rows', dies_on_the_third)
    with pytest.raises(KeyboardInterrupt):
        sample_index.open_index(db)
    monkeypatch.undo()
    conn = sqlite3.connect(sample_index.index_path(db))
    done = conn.execute('SELECT count(*) FROM sessions').fetchone()[0]
    orphans = conn.execute('SELECT count(*) FROM samples WHERE session NOT IN '
                           '(SELECT id FROM sessions)').fetchone()[0]
    conn.close()
    assert done == 2 and orphans == 0
    index = sample_index.open_index(db)
    try:
        assert_index_is_full_read(index, db)
    finally:
        index.close()


def test_an_unreadable_session_is_named_and_skipped(tmp_path, report):
    db, _ = make(tmp_path, report, 3)
    bad = store.read_db(db)[1].uuid
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET json_blob = '{\"runs\": [' WHERE uuid = ?", (bad,))
    warned = []
    index = sample_index.open_index(db, warned.append)
    try:
        assert bad not in {s.uuid for s in index.sessions()} and len(index.sessions()) == 2
    finally:
        index.close()
    assert any(bad in w and 'unreadable' in w for w in warned)
    good = history_gen.Generator(report, 3).session(1)          # the record repaired
    good['session_info']['uuid'] = bad
    with sqlite3.connect(db) as conn:
        conn.execute('UPDATE sessions SET json_blob = ? WHERE uuid = ?', (json.dumps(good), bad))
    index = sample_index.open_index(db)
    try:
        assert bad in {s.uuid for s in index.sessions()}
        assert_index_is_full_read(index, db)
    finally:
        index.close()


def run_history(db: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / 'store.json'
    assert cli.main(['history', '--db', str(db), '--json', str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_history_finds_the_planted_change_points_and_no_others(tmp_path, report):
    db, gen = make(tmp_path, report, 120)
    sessions = store.read_db(db)
    planted = {c.environ: c for c in gen.changes}
    assert len(planted) == 2
    found = run_history(db, tmp_path)
    assert found['change_points']
    for cp in found['change_points']:
        change = planted.get(cp['key'][2])
        assert change is not None, f'a change point nobody planted: {cp}'
        assert cp['session'] == sessions[change.at].uuid, cp
        assert cp['worse'] is True
        assert set(cp['provenance_changes']) == {change.field}, cp
        before, after = cp['provenance_changes'][change.field]
        assert after == change.after and before != after
    for environ in planted:                     # every key variable of the upgraded stack
        keys = [tuple(s['key']) for s in found['series'] if s['key'][2] == environ]
        hits = [tuple(cp['key']) for cp in found['change_points'] if cp['key'][2] == environ]
        assert keys and sorted(hits) == sorted(keys)


def test_history_over_the_index_equals_history_over_every_session(tmp_path, report):
    db, _ = make(tmp_path, report, 40, repeat=2)
    streamed = run_history(db, tmp_path, '--all')
    sessions = store.read_db(db)
    keys = {tuple(s['key']) for s in streamed['series']}
    assert keys == {k for k, pts in trend.series(sessions).items()
                    if selection.keep_key(k, pts[0].unit, True)}
    series, points = trend.history(sessions, keys)      # the same variables judged together
    for row in streamed['series']:
        assert [p['value'] for p in row['points']] == [p.value for p in
                                                       series[tuple(row['key'])]]
    assert points and sorted(json.dumps(cp, sort_keys=True)
                             for cp in streamed['change_points']) == sorted(
        json.dumps(cp.as_dict(), sort_keys=True) for cp in points)


def test_history_selections(tmp_path, report, capsys):
    db, _ = make(tmp_path, report, 10)
    sessions = store.read_db(db)
    assert run_history(db, tmp_path, '--last', '4')['sessions'] == [s.uuid for s in sessions[-4:]]
    one = run_history(db, tmp_path, '--session', sessions[3].uuid[:10])
    assert one['sessions'] == [sessions[3].uuid]
    assert cli.main(['history', '--db', str(db), '--since', '2999-01-01']) == 2
    assert 'no session matches' in capsys.readouterr().err


def test_compare_says_since_when_from_the_index(tmp_path, report):
    """A regression judged against an early session: "since when" is the planted upgrade."""
    change = history_gen.Change(at=6, environ='gnu-mpich4', field='mpi_version', before='',
                                after='4.1.6', factor=1.6)
    db, gen = make(tmp_path, report, 10, repeat=10, changes=[change])
    sessions = store.read_db(db)
    out = tmp_path / 'gate.json'
    args = ['compare', '--db', str(db), '--baseline-session', sessions[0].uuid, '--json', str(out)]
    assert cli.main(args) == 1          # no index: compare does not build one, says no since
    assert not sample_index.index_path(db).exists()
    assert all(c['since'] is None for c in json.loads(out.read_text())['comparisons'])
    sample_index.open_index(db).close()
    code = cli.main(args)
    record = json.loads(out.read_text())
    regressed = [c for c in record['comparisons'] if c['verdict'] == 'regressed']
    assert code == 1 and regressed, [(c['environ'], c['variable'], c['verdict'])
                                     for c in record['comparisons']]
    assert {c['environ'] for c in regressed} == {'gnu-mpich4'}
    for c in regressed:
        assert c['since']['session'] == sessions[6].uuid
        assert 'mpi_version' in c['since']['provenance_changes']


def test_archive_moves_old_sessions_and_loses_none(tmp_path, report, capsys):
    db, gen = make(tmp_path, report, 6)
    before = store.read_db(db)
    sample_index.open_index(db).close()
    cut = datetime.datetime.fromtimestamp(before[4].time_start).isoformat(timespec='minutes')
    into = tmp_path / 'archive.db'
    assert cli.main(['archive', '--db', str(db), '--before', cut, '--into', str(into)]) == 0
    assert 'moved 4 session(s)' in capsys.readouterr().out
    live, kept = store.read_db(db), store.read_db(into)
    assert [s.uuid for s in kept + live] == [s.uuid for s in before]
    with sqlite3.connect(db) as conn:
        assert conn.execute('SELECT count(DISTINCT session_uuid) FROM testcases').fetchone() == (2,)
    with sqlite3.connect(into) as conn:
        assert conn.execute('SELECT count(*) FROM testcases').fetchone()[0] == sum(
            len(s.cases) for s in kept)
    index = sample_index.open_index(db)           # the index follows the live database
    try:
        assert_index_is_full_read(index, db)
    finally:
        index.close()
    # Again: nothing left to move; a conflicting record in the archive stops the move.
    assert cli.main(['archive', '--db', str(db), '--before', cut, '--into', str(into)]) == 0
    history_gen.write_db(db, [gen.session(0)])        # an older session stored late...
    with sqlite3.connect(into) as conn:               # ...whose uuid the archive holds already
        conn.execute('UPDATE sessions SET uuid = ? WHERE uuid = ?',
                     (store.read_db(db)[0].uuid, kept[0].uuid))
    assert cli.main(['archive', '--db', str(db), '--before', cut, '--into', str(into)]) == 2
    assert 'already archived with another record' in capsys.readouterr().err
    assert len(store.read_db(db)) == 3               # it stayed in the live database


def test_segmentation_is_ruptures_pelt():
    """history's segmentation is ruptures' PELT (l2, min_size 1, jump 1), only faster: the
    same breakpoints on series with and without shifts, ties and constant runs."""
    ruptures = pytest.importorskip('ruptures')
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(2, 160))
        x = rng.normal(0, 1, n) + rng.normal(0, 10)
        for at in rng.integers(0, n, int(rng.integers(0, 4))):
            x[at:] += rng.normal(0, 4)
        if rng.random() < 0.2:
            x = np.round(x)
        pen = 3 * np.log(n)
        expected = ruptures.Pelt(model='l2', min_size=1, jump=1).fit(
            x.reshape(-1, 1)).predict(pen=pen)
        assert trend.pelt_l2(x, pen) == expected


def test_segmentation_of_many_variables_is_each_alone():
    """Series of one length segmented together (each row pruned on its own) give each
    series' own breakpoints: shifted, flat, rounded and constant series side by side."""
    rng = np.random.default_rng(11)
    for n in (2, 5, 40, 120):
        batch = []
        for i in range(24):
            x = rng.normal(0, 1, n) + rng.normal(0, 10)
            for at in rng.integers(0, n, int(rng.integers(0, 4))):
                x[at:] += rng.normal(0, 4)
            batch.append(np.round(x) if i % 5 == 1 else np.full(n, 3.0) if i % 7 == 2 else x)
        pen = 3 * np.log(n)
        assert trend.pelt_l2_many(batch, pen) == [trend.pelt_l2(x, pen) for x in batch]
        assert any(len(b) > 1 for b in trend.pelt_l2_many(batch, pen)) or n < 40


def test_report_history_section_reads_the_index(tmp_path, report, monkeypatch):
    """The report of a stored session takes its history from the sample index (the other
    sessions' records are not decoded) and marks the planted upgrade."""
    from commcheck.report import entry
    change = history_gen.Change(at=14, environ='gnu-openmpi4', field='env.UCX_TLS',
                                before='sm,self', after='tcp,self', factor=1.5)
    db, _ = make(tmp_path, report, 24, changes=[change])
    sessions = store.read_db(db)
    monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(tmp_path / 'refs'))
    decoded = []
    real = store.decode_record
    sample_index.open_index(db).close()
    monkeypatch.setattr(store, 'decode_record',
                        lambda blob, where, *a: decoded.append(where) or real(blob, where, *a))
    page = entry.report_of_stored(db, [], tmp_path / 'out', tmp_path, lambda m: None)
    assert decoded == [f'{db} session {sessions[-1].uuid}']      # only the reported one
    data = json.loads((page.parent / 'data.json').read_text())['sections']['history']
    assert len(data['sessions']) == 24
    flagged = {tuple(r['key']): r['change_points'] for r in data['rows'] if r['change_points']}
    assert flagged and {k[2] for k in flagged} == {'gnu-openmpi4'}
    for cps in flagged.values():
        assert [cp['session'] for cp in cps] == [sessions[14].uuid[:8]]
        assert [c['field'] for c in cps[0]['changes']] == ['env.UCX_TLS']


def test_the_report_of_a_run_opens_the_results_database_once(tmp_path, report, monkeypatch):
    """An unreadable run report: the newest stored session is reported, and the database it
    came from is the report's history, opened once (not again for the history)."""
    from commcheck.report import entry
    from commcheck.results import source
    db, _ = make(tmp_path, report, 4)
    monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(tmp_path / 'refs'))
    opened = []
    real = source.LocalHistory.__init__
    monkeypatch.setattr(source.LocalHistory, '__init__',
                        lambda self, *a, **k: opened.append(a[0]) or real(self, *a, **k))
    damaged = tmp_path / 'run-report-0.json'
    damaged.write_text('{"session_info": ')
    said = []
    page = entry.report_of_run(damaged, tmp_path, db, said.append)
    assert page and page.exists() and opened == [db], (opened, said)
    assert any('reporting the newest stored session' in m for m in said)


def test_report_history_section_in_worker_processes_is_the_serial_one(tmp_path, report,
                                                                     monkeypatch):
    """From PARALLEL_FROM keys on, the change points are searched in forked workers, each
    through its own read-only connection: the section is the same, variable for variable."""
    from commcheck.report import entry
    change = history_gen.Change(at=8, environ='gnu-mpich4', field='mpi_version',
                                before='4.0.2', after='4.1', factor=1.4)
    db, _ = make(tmp_path, report, 12, changes=[change])
    monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(tmp_path / 'refs'))
    searched_in = pids_of_calls(monkeypatch, tmp_path / 'pids', trend, 'stream')
    sections = []
    for parallel_from in (10 ** 9, 1):
        monkeypatch.setattr(trend, 'PARALLEL_FROM', parallel_from)
        searched_in.write_text('')
        page = entry.report_of_stored(db, [], tmp_path / f'out{parallel_from}', tmp_path,
                                      lambda m: None)
        sections.append(json.loads((page.parent / 'data.json').read_text())['sections']
                        ['history'])
        pids = set(searched_in.read_text().split())
        assert (pids == {str(os.getpid())}) == (parallel_from > 1), pids
    serial, parallel = sections
    assert serial == parallel and any(r['change_points'] for r in serial['rows'])


def test_history_in_worker_processes_is_the_serial_one(tmp_path, report, monkeypatch):
    """`commcheck history` searches in forked workers from PARALLEL_FROM variables on: the
    change points and series it writes are the serial ones, and the planted one is found."""
    change = history_gen.Change(at=8, environ='gnu-mpich4', field='mpi_version',
                                before='4.0.2', after='4.1', factor=1.4)
    db, _ = make(tmp_path, report, 12, changes=[change])
    searched_in = pids_of_calls(monkeypatch, tmp_path / 'pids', trend, 'stream')
    written = []
    for parallel_from in (10 ** 9, 1):
        monkeypatch.setattr(trend, 'PARALLEL_FROM', parallel_from)
        searched_in.write_text('')
        out = tmp_path / f'history{parallel_from}.json'
        assert cli.main(['history', '--db', str(db), '--json', str(out)]) == 0
        written.append(json.loads(out.read_text()))
        pids = set(searched_in.read_text().split())
        assert (pids == {str(os.getpid())}) == (parallel_from > 1), pids
    serial, parallel = written
    assert serial == parallel
    assert serial['change_points'] and all(cp['provenance_changes'] == {
        'mpi_version': ['4.0.2', '4.1']} for cp in serial['change_points'])


def test_baseline_and_compare_decode_only_what_they_judge(tmp_path, report, monkeypatch):
    db, _ = make(tmp_path, report, 12, repeat=5, changes=[])
    sessions = store.read_db(db)
    decoded = []
    real = store.decode_record
    monkeypatch.setattr(store, 'decode_record',
                        lambda blob, where, *a: decoded.append(where) or real(blob, where, *a))
    refs = tmp_path / 'refs'
    assert cli.main(['baseline', '--db', str(db), '--last', '3', '--refs', str(refs)]) == 0
    assert decoded == [f'{db} session {s.uuid}' for s in sessions[-3:]]
    decoded.clear()
    monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(refs))
    out = tmp_path / 'gate.json'
    assert cli.main(['compare', '--db', str(db), '--session', sessions[5].uuid,
                     '--json', str(out)]) == 0       # clean: nothing regressed, no history read
    assert decoded == [f'{db} session {sessions[5].uuid}']
    assert not sample_index.index_path(db).exists()
    assert json.loads(out.read_text())['counts']['unchanged'] > 0


def test_a_database_in_a_read_only_place_is_indexed_under_the_state_dir(tmp_path, report,
                                                                       monkeypatch):
    db, _ = make(tmp_path, report, 2)
    monkeypatch.setattr(sample_index.paths, 'STATE_DIR', tmp_path / 'state')
    monkeypatch.setattr(sample_index.os, 'access', lambda path, mode: False)
    path = sample_index.index_path(db)
    assert path.parent == tmp_path / 'state' / 'index' and path.name.endswith('.index.db')
    index = sample_index.open_index(db)
    try:
        assert index.path == path and len(index.sessions()) == 2
    finally:
        index.close()
    assert not (tmp_path / 'results.index.db').exists()


def test_a_selection_read_through_the_index_is_the_decoded_selection(tmp_path, report):
    db, _ = make(tmp_path, report, 8, repeat=3, changes=[])
    results = store.ResultsDB(db)
    chosen = results.choose(last=3)
    index = sample_index.open_index(db, only=[s.uuid for s in chosen])
    try:     # only the sessions asked for were decoded into it
        assert [s.uuid for s in index.sessions()] == [s.uuid for s in chosen]
        decoded = by_key(results.load(chosen, cases=False))
        assert {key for key, _ in index.keys()} == set(decoded)
        for key, samples in decoded.items():
            assert index.launches(key) == measured(samples), key
            assert index.launches(key, index.sessions()[1:]) == measured(
                [s for s in samples if s.session != chosen[0].uuid]), key
    finally:
        index.close()


def test_baseline_decoded_in_worker_processes_is_the_serial_one(tmp_path, report,
                                                                monkeypatch):
    """From PARALLEL_FROM sessions on, baseline decodes in forked workers (keeping only the
    samples it judges): what it writes is what decoding here writes; an index is left as is."""
    db, _ = make(tmp_path, report, 8, repeat=5, changes=[])
    sample_index.open_index(db, only=[]).close()               # an index exists, empty
    decoded_in = pids_of_calls(monkeypatch, tmp_path / 'pids', store, 'decode_record')
    written = {}
    for parallel_from in (10 ** 9, 2):
        monkeypatch.setattr(store, 'PARALLEL_FROM', parallel_from)
        decoded_in.write_text('')
        refs = tmp_path / str(parallel_from)
        assert cli.main(['baseline', '--db', str(db), '--last', '4', '--refs', str(refs)]) == 0
        pids = decoded_in.read_text().split()
        assert len(pids) == 4 and (set(pids) == {str(os.getpid())}) == (parallel_from > 4)
        record = json.loads((refs / 'local.baseline.json').read_text())
        record.pop('created')
        written[parallel_from] = record, (refs / 'local.yaml').read_text()
    assert written[10 ** 9] == written[2] and written[2][0]['variables']
    index = sample_index.open_index(db, only=[])
    try:
        assert len(index.sessions()) == 0                     # baseline never extends it
    finally:
        index.close()
