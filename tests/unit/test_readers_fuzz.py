"""Every reader of stored data, fed damaged input: a clear error of its own kind, or the usable
rest with warnings, and never a traceback of any other kind.

The inputs start from real files (a ReFrame run report and perflog of this suite, committed in
tests/data with their machine paths replaced, a real results database built from that report,
real site and reference files) and are cut short, overwritten with random bytes, or replaced by
random bytes. hypothesis draws them (derandomized, so a failure reproduces); the number of
inputs tried is in ``MAX_EXAMPLES`` per reader.
"""

import json
import sqlite3
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from commcheck.analysis import kernel_records, osu_output
from commcheck.results import baselinefile, preflight, references, store
from commcheck.site import SiteError, sitefile

DATA = Path(__file__).parents[1] / 'data'
RUN_REPORT = (DATA / 'run-report-pingpong.json').read_bytes()
PERFLOG = (DATA / 'PingPong.log').read_bytes()
REFS = b'PingPong:\n  $index: [$partition, $environ]\n  "local:default":\n    ".*":\n' \
       b'      latency_8B: [1.0, null, 19.0, us]\n      bw_1048576B: [2000, -0.9, null, MB/s]\n'
SITE = b'name: s\npartitions:\n  - {name: p, cores: 2}\nstacks:\n  - compiler: {family: gnu, ' \
       b'version: "12"}\n    mpi: {flavour: mpich, version: 4.0.2}\n'
KERNEL_OUT = b'META kernel=pingpong lang=c ranks=2 mpi="MPICH Version: 4.0.2"\n' \
             b'DATA size=8 iters=10 rtt_us=1.0 oneway_us=0.5 bw_MBps=16.0\nPASS validated=40\n'
OSU_OUT = b'# OSU MPI Latency Test v7.3\n# Size          Latency (us)        Validation\n' \
          b'1                       0.21                Pass\n2                       0.22' \
          b'                Pass\n'
MAX_EXAMPLES = 150
FUZZ = settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def damaged(original: bytes):
    """Cut short, overwritten in places, or garbage, starting from a real file."""
    cut = st.integers(0, len(original)).map(lambda n: original[:n])
    flip = st.lists(st.tuples(st.integers(0, max(len(original) - 1, 0)),
                              st.binary(min_size=1, max_size=8)),
                    min_size=1, max_size=6).map(lambda edits: _overwrite(original, edits))
    return st.one_of(cut, flip, st.binary(max_size=400))


def _overwrite(original: bytes, edits) -> bytes:
    data = bytearray(original)
    for pos, chunk in edits:
        data[pos:pos + len(chunk)] = chunk
    return bytes(data)


def quiet(_message):
    pass


def test_the_real_files_read_cleanly(tmp_path):
    path = tmp_path / 'r.json'
    path.write_bytes(RUN_REPORT)
    warnings = []
    sess = store.read_run_report(path, warnings.append)
    assert len(sess.samples) >= 4 * 3 and not warnings
    log = tmp_path / 'PingPong.log'
    log.write_bytes(PERFLOG)
    assert len(store.read_perflog(log, warnings.append)) == 12 and not warnings
    (tmp_path / 'refs.yaml').write_bytes(REFS)
    assert references.problem(tmp_path / 'refs.yaml') is None


@FUZZ
@given(data=damaged(RUN_REPORT))
def test_run_report_reader(tmp_path, data):
    path = tmp_path / 'run-report.json'
    path.write_bytes(data)
    try:
        sess = store.read_run_report(path, quiet)
    except store.HistoryError as err:
        assert str(path) in str(err) and '\n' not in str(err)
    else:
        assert all(isinstance(s.value, float) for s in sess.samples)


def _db(path: Path, report: bytes) -> None:
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
                 'session_end_unix REAL, json_blob TEXT, report_file TEXT)')
    conn.execute('INSERT INTO sessions VALUES(?, 1, 2, ?, ?)',
                 ('u1', report.decode('utf-8', errors='replace'), 'r.json'))
    conn.commit()
    conn.close()


@FUZZ
@given(blob=damaged(RUN_REPORT))
def test_results_database_rows(tmp_path, blob):
    path = tmp_path / 'rows.db'
    path.unlink(missing_ok=True)
    _db(path, blob)
    warnings = []
    sessions = store.read_db(path, warnings.append)
    assert len(sessions) + len(warnings) >= 1


@pytest.fixture(scope='module')
def real_db(tmp_path_factory):
    path = tmp_path_factory.mktemp('db') / 'results.db'
    _db(path, RUN_REPORT)
    return path.read_bytes()


@FUZZ
@given(data=st.data())
def test_results_database_file(tmp_path, real_db, data):
    path = tmp_path / 'results.db'
    path.write_bytes(data.draw(damaged(real_db)))
    try:
        store.read_db(path, quiet)
    except store.HistoryError as err:
        assert str(path) in str(err)
    assert preflight.results_db_damage(path) is None or path.exists()


@FUZZ
@given(data=damaged(PERFLOG))
def test_perflog_reader_and_preflight(tmp_path, data):
    root = tmp_path / 'perflogs'
    root.mkdir(exist_ok=True)
    for old in root.iterdir():
        old.unlink()
    path = root / 'PingPong.log'
    path.write_bytes(data)
    samples = store.read_perflog(path, quiet)
    assert all(s.value == s.value for s in samples)
    moved = preflight.protect_perflogs(root)
    kept = list(root.iterdir())
    assert len(kept) == 1 and kept[0].read_bytes() == data      # renamed or left, never changed
    assert bool(moved) == (kept[0].name != 'PingPong.log')


@FUZZ
@given(data=damaged(REFS))
def test_reference_file_validation(tmp_path, data):
    path = tmp_path / 'local.yaml'
    path.write_bytes(data)
    problem = references.problem(path)
    assert problem is None or (problem.startswith(str(path)) and '\n' not in problem)
    if problem is None:
        yaml.safe_load(data)


@FUZZ
@given(data=damaged(SITE))
def test_site_file_parser(data):
    try:
        sitefile.parse(data.decode('utf-8', errors='replace'), 'site.yaml')
    except SiteError as err:
        assert str(err).startswith('site.yaml') and '\n' not in str(err)


@FUZZ
@given(data=damaged(KERNEL_OUT))
def test_kernel_record_parser(data):
    try:
        kernel_records.parse(data.decode('utf-8', errors='replace'))
    except kernel_records.RecordError:
        pass


@FUZZ
@given(data=damaged(OSU_OUT))
def test_osu_parser(data):
    text = data.decode('utf-8', errors='replace')
    assert isinstance(osu_output.problems(text, [1, 2]), list)


@FUZZ
@given(data=st.one_of(st.binary(max_size=300), st.just(b'{}'),
                      st.just(json.dumps({'system': 's', 'created': 'x', 'sessions': [],
                                          'policy': {}, 'variables': [{}]}).encode())))
def test_baseline_file_reader(tmp_path, data):
    path = tmp_path / 'local.baseline.json'
    path.write_bytes(data)
    with pytest.raises(baselinefile.BaselineError, match='local.baseline.json'):
        baselinefile.load(path)
