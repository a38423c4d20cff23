"""Nothing recorded is lost, and every bad input gets one clear line: the run and the commands.

Each test feeds real damaged input (a perflog with binary bytes, one cut off mid-write, a
results database that is garbage, reference files that are wrong) to a real ``commcheck run`` or
``reframe`` session, and checks the one-line message, the exit code, and that the earlier data
is byte-for-byte unchanged or kept aside.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from commcheck.analysis.gate import Settings
from commcheck.cli import runstate
from commcheck.results import store
from tests.conftest import STACKS, commcheck_cmd, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.integration]

TINY = ['-n', 'PingPong%lang=c', '-S', 'sizes=8,64', '-S', 'iters=20']


@pytest.fixture
def env(isolated_env, tmp_path):
    isolated_env['RFM_REFERENCE_PREFIX'] = str(tmp_path / 'refs')
    (tmp_path / 'refs').mkdir()
    return isolated_env


def run(env, *reframe_args, timeout=900):
    return subprocess.run([commcheck_cmd(), 'run', '--no-report', '--', *TINY, '-p',
                           f'^{STACKS[0].name}$', *reframe_args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def reports(env) -> Path:
    return Path(env['COMMCHECK_REPORTS'])


def one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith('ERROR:')]
    assert len(errors) == 1, stderr
    return errors[0]


def test_damaged_perflogs_are_set_aside_and_the_session_runs(env):
    first = run(env)
    assert first.returncode == 0, first.stdout[-2000:]
    logs = reports(env) / 'perflogs' / 'local' / 'default'
    binary, cut = logs / 'PingPong.log', logs / 'KernelsBuild.log'
    damaged = binary.read_bytes() + b'\x00\xff\xfe garbage \x81\n'
    binary.write_bytes(damaged)
    truncated = cut.read_bytes()[:-7]
    cut.write_bytes(truncated)
    second = run(env)
    assert second.returncode == 0, second.stdout[-2000:]
    assert 'undecodable bytes at line' in second.stderr
    assert 'was cut off mid-write' in second.stderr
    kept = {p.name.split('.damaged-')[0]: p.read_bytes() for p in logs.glob('*.damaged-*')}
    assert kept == {'PingPong.log': damaged, 'KernelsBuild.log': truncated}
    assert binary.read_bytes().decode('utf-8').endswith('\n')     # a clean file, appended to
    samples = store.read_perflogs(logs, warn=lambda m: None)
    assert len({s.time for s in samples if s.variable == 'latency_8B'}) == 2   # both sessions


def test_a_garbage_results_database_is_set_aside_and_a_new_one_made(env):
    db = reports(env) / 'results.db'
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(b'SQLite format 3\x00' + os.urandom(3000))
    garbage = db.read_bytes()
    done = run(env)
    assert done.returncode == 0, done.stdout[-2000:]
    assert 'results.db: not a readable SQLite database' in done.stderr or 'damaged' in done.stderr
    aside = list(db.parent.glob('results.db.damaged-*'))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert len(store.read_db(db)) == 1


@pytest.mark.parametrize('text,words', [
    ('PingPong:\n  $index: [$partition, $environ\n', 'not valid YAML'),
    ('- PingPong\n- OsuPt2Pt\n', 'the top level must map check names'),
    ('PingPong:\n  $index: [$partition, $environ]\n  "local:default":\n    ".*":\n'
     '      latency_8B: [1.0, null, "5", us]\n', 'upper threshold'),
])
def test_a_bad_reference_file_fails_loudly_after_measuring(env, text, words):
    ref = Path(env['RFM_REFERENCE_PREFIX']) / 'local.yaml'
    ref.write_text(text)
    done = run(env)
    assert done.returncode != 0
    assert 'Traceback' not in done.stdout + done.stderr
    sess = store.read_run_report(max((reports(env) / 'runs').glob('*.json'),
                                       key=lambda p: p.stat().st_mtime))
    cases = [c for c in sess.cases if not c['fixture']]
    assert cases and all(c['result'] == 'fail' for c in cases)
    assert all(f'reference file unusable: {ref}' in c['fail_reason'] and words in c['fail_reason']
               for c in cases)
    assert {s.variable for s in sess.samples} >= {'latency_8B', 'bw_64B'}   # measured, kept
    assert ref.read_text() == text


def test_filters_that_match_nothing_and_flags_reframe_refuses(env):
    nothing = subprocess.run([commcheck_cmd(), 'run', '--', '-n', 'NoSuchCheck'], env=env,
                             capture_output=True, text=True, timeout=600)
    assert nothing.returncode == 2
    assert 'no check matched the ReFrame arguments' in one_error_line(nothing.stderr)
    bogus = subprocess.run([commcheck_cmd(), 'run', '--', '--bogus'], env=env,
                           capture_output=True, text=True, timeout=600)
    assert bogus.returncode == 2
    assert 'ReFrame refused its arguments: unrecognized arguments: --bogus' in \
        one_error_line(bogus.stderr)
    repeat = subprocess.run([commcheck_cmd(), 'run', '--', '--repeat', 'abc'], env=env,
                            capture_output=True, text=True, timeout=600)
    assert repeat.returncode == 2
    assert "ReFrame refused its arguments: argument to '--repeat' option must be a " \
           "non-negative integer" in one_error_line(repeat.stderr)


@pytest.mark.parametrize('argv,words', [
    (['bench', '--iters', '0'], '--iters: 0 must be at least 1'),
    (['report', '--out', '/dev/null'], 'is not a directory'),
    (['compare', '--session', 'ffffffff'], 'no results database'),
    (['compare', '--session', 'nope'], 'is not a session uuid'),
    (['compare', '--min-effect', '2'], 'must be between 0 and 1'),
    (['baseline', '--since', 'yesterday'], 'is not a date'),
    (['run', '--site', 'nowhere'], "no site 'nowhere'"),
    (['site', 'check', '/nonexistent.yaml'], 'no such file'),
])
def test_bad_arguments_are_one_line_before_any_work(env, argv, words):
    start = time.monotonic()
    done = subprocess.run([commcheck_cmd(), *argv], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and words in one_error_line(done.stderr), done.stderr
    assert time.monotonic() - start < 30          # refused before building anything


def test_reports_dir_that_is_a_file_is_one_line(env, tmp_path):
    env['COMMCHECK_REPORTS'] = str(tmp_path / 'a-file')
    (tmp_path / 'a-file').write_text('x')
    done = subprocess.run([commcheck_cmd(), 'run'], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and 'is not a directory' in one_error_line(done.stderr)


def test_compare_on_damaged_history_is_one_line_and_writes_nothing(env):
    db = reports(env) / 'results.db'
    db.parent.mkdir(parents=True)
    db.write_bytes(b'not a database at all' * 50)
    before = db.read_bytes()
    done = subprocess.run([commcheck_cmd(), 'compare', '--db', str(db)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert 'not a readable ReFrame results database' in one_error_line(done.stderr)
    assert db.read_bytes() == before


def test_compare_without_enough_launches_cannot_decide(env):
    assert run(env).returncode == 0
    base = subprocess.run([commcheck_cmd(), 'baseline'], env=env, capture_output=True, text=True)
    assert base.returncode == 2 and 'too few launches to baseline' in one_error_line(base.stderr)
    none = subprocess.run([commcheck_cmd(), 'compare'], env=env, capture_output=True, text=True)
    assert none.returncode == 2 and 'no baseline' in one_error_line(none.stderr)
    same = subprocess.run([commcheck_cmd(), 'compare', '--baseline-session',
                           store.read_db(reports(env) / 'results.db')[0].uuid], env=env,
                          capture_output=True, text=True)
    assert same.returncode == 3, same.stdout[-2000:]          # 1 launch each: undecided
    record = json.loads(max((reports(env) / 'gate').glob('*.json'),
                            key=lambda p: p.stat().st_mtime).read_text())
    assert {c['verdict'] for c in record['comparisons']} == {'cannot tell'}, record
    need = f'need {Settings().min_samples} each'
    assert all(need in c['note'] for c in record['comparisons']), record


LONG = ['-n', '^PingPong%lang=c', '-S', 'iters=200000', '-S', 'sizes=1:1048576']


def ignoring(*signals):
    """A child started the way a background job of a script or nohup starts: with these
    signals ignored (SIG_IGN survives exec)."""
    def setup():
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)
    return setup


def start_long_run(env, ignored=(signal.SIGINT, signal.SIGHUP)):
    """A commcheck run, in a process group of its own, started with SIGINT and SIGHUP ignored;
    returns when its PingPong job runs."""
    proc = subprocess.Popen([commcheck_cmd(), 'run', '--no-report', '--', *LONG, '-p',
                             f'^{STACKS[0].name}$'], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=ignoring(*ignored))
    seen = ''
    for line in proc.stdout:
        seen += line
        if 'RUN' in line and 'PingPong' in line:        # a test is running
            time.sleep(3)
            return proc, seen
    raise AssertionError(f'no PingPong ran: {seen[-3000:]}')


def run_record(env) -> dict:
    return json.loads((Path(env['COMMCHECK_STATE']) / 'run.lock').read_text())


def left_running(run_id: str, wait: float = 10.0) -> list[int]:
    deadline = time.monotonic() + wait
    while (found := runstate.processes_of(run_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: signal.Signals(s).name)
def test_sigint_to_commcheck_alone_stores_the_partial_session(env, sig):
    """SIGINT (and SIGTERM, SIGHUP) to commcheck alone. Whatever the parent ignored (SIGINT
    and SIGHUP here, as a background job of a script under nohup), the signal reaches ReFrame,
    which stops and stores the partial session."""
    proc, seen = start_long_run(env)
    run_id = run_record(env)['run_id']
    proc.send_signal(sig)                               # to commcheck alone, not its group
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode == 128 + sig, seen + rest
    sessions = store.read_db(reports(env) / 'results.db')
    assert len(sessions) == 1, seen + rest
    built = [c for c in sessions[0].cases if c['fixture']]
    assert built and built[0]['result'] == 'pass'       # what finished before the signal
    assert not left_running(run_id)                     # nothing orphaned
    assert run(env).returncode == 0                     # and the next run works


@pytest.mark.parametrize('also_reframe', [False, True])
def test_a_run_killed_outright_leaves_nothing_and_the_next_run_works(env, also_reframe):
    """SIGKILL to commcheck's process group (a CI runner's hard timeout): ReFrame, in its own
    session, dies with commcheck and cancels its jobs. With ReFrame killed too, the jobs
    survive it; the next run ends them by the run id it recorded, says so, and runs."""
    proc, seen = start_long_run(env)
    record = run_record(env)
    os.killpg(proc.pid, signal.SIGKILL)
    if also_reframe:
        os.killpg(record['reframe_pid'], signal.SIGKILL)
    proc.communicate(timeout=60)
    if also_reframe:
        time.sleep(2)
        assert runstate.processes_of(record['run_id'])  # the job outlived ReFrame
    else:
        assert not left_running(record['run_id'], wait=60)
    again = run(env)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr
    assert f'the run of pid {proc.pid}' in again.stderr
    if also_reframe:
        assert 'ended what it left running' in again.stderr and 'pingpong-c' in again.stderr
    assert not runstate.processes_of(record['run_id'])
    leftovers = subprocess.run(['pgrep', '-f', 'pingpong-c --sizes 1:1048576'],
                               capture_output=True, text=True)
    assert not leftovers.stdout.strip()


def test_a_second_run_at_once_refuses_naming_the_first(env):
    proc, seen = start_long_run(env)
    start = time.monotonic()
    second = subprocess.run([commcheck_cmd(), 'run', '--', *TINY], env=env,
                            capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and time.monotonic() - start < 60
    line = one_error_line(second.stderr)
    assert f'another commcheck run (pid {proc.pid}, started ' in line
    assert second.stdout == ''
    pre = subprocess.run([commcheck_cmd(), 'preflight'], env=env, capture_output=True, text=True)
    assert pre.returncode == 2 and f'pid {proc.pid}' in one_error_line(pre.stderr)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=300)
    assert len(store.read_db(reports(env) / 'results.db')) == 1   # the first one's, stored


@pytest.mark.parametrize('content', [b'', 'no tables'])
def test_an_empty_results_database_is_set_aside_and_the_session_stored(env, content):
    db = reports(env) / 'results.db'
    db.parent.mkdir(parents=True)
    if content:
        sqlite3.connect(db).execute('PRAGMA user_version = 1').connection.commit()
    else:
        db.write_bytes(content)
    before = db.read_bytes()
    pre = subprocess.run([commcheck_cmd(), 'preflight'], env=env, capture_output=True, text=True)
    assert pre.returncode == 0 and 'results.db: ' in pre.stdout and 'moved aside' in pre.stdout
    aside = list(db.parent.glob('results.db.damaged-*'))
    assert len(aside) == 1 and aside[0].read_bytes() == before
    aside[0].rename(db)                                 # again, now through run
    done = run(env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert 'results.db: empty' in done.stderr or 'results.db: holds no tables' in done.stderr
    assert 'failed to store' not in done.stdout
    assert len(store.read_db(db)) == 1


def test_a_session_reframe_cannot_store_is_an_error_naming_the_database(env):
    """A sound database whose inserts fail (here a trigger; a full disk in life): ReFrame
    runs, cannot store the session and says so on stdout only; commcheck exits 2 naming it."""
    assert run(env).returncode == 0
    db = reports(env) / 'results.db'
    conn = sqlite3.connect(db)
    conn.execute("CREATE TRIGGER full BEFORE INSERT ON sessions "
                 "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    conn.commit()
    conn.close()
    done = run(env)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    line = one_error_line(done.stderr)
    assert f'could not store the session in {db}' in line and 'disk is full' in line


def test_a_state_that_would_lose_the_session_is_refused_before_reframe(env):
    reports(env).mkdir(parents=True)
    (reports(env) / '.db.lock').mkdir()              # ReFrame's database lock
    for argv in (['run', '--', *TINY], ['preflight']):
        done = subprocess.run([commcheck_cmd(), *argv], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2 and '.db.lock' in one_error_line(done.stderr)
        assert '[ReFrame Setup]' not in done.stdout
