"""Nothing recorded is lost, and every bad input gets one clear line: the run and the commands.

Each test feeds real damaged input (a perflog with binary bytes, one cut off mid-write, a
results database that is garbage, reference files that are wrong) to a real ``commcheck run`` or
``reframe`` session, and checks the one-line message, the exit code, and that the earlier data
is byte-for-byte unchanged or kept aside.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from commcheck import history
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
    samples = history.read_perflogs(logs, warn=lambda m: None)
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
    assert len(history.read_db(db)) == 1


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
    sess = history.read_run_report(max((reports(env) / 'runs').glob('*.json'),
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


@pytest.mark.parametrize('argv,words', [
    (['bench', '--iters', '0'], '--iters: 0 must be at least 1'),
    (['report', '--out', '/dev/null'], 'is not a directory'),
    (['compare', '--session', 'nope'], 'no results database'),
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
                           history.read_db(reports(env) / 'results.db')[0].uuid], env=env,
                          capture_output=True, text=True)
    assert same.returncode == 3, same.stdout[-2000:]          # 1 launch each: undecided
    assert 'too few samples' in same.stdout


def test_sigint_to_commcheck_alone_stores_the_partial_session(env):
    proc = subprocess.Popen([commcheck_cmd(), 'run', '--no-report', '--', '-n', '^PingPong',
                             '-p', f'^{STACKS[0].name}$', '-S', 'iters=200000', '-S',
                             'sizes=1:1048576'], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = ''
    for line in proc.stdout:
        seen += line
        if 'RUN' in line and 'PingPong' in line:        # a test is running
            time.sleep(3)
            proc.send_signal(signal.SIGINT)             # to commcheck alone, not its group
            break
    rest, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0
    sessions = history.read_db(reports(env) / 'results.db')
    assert len(sessions) == 1, seen + rest
    built = [c for c in sessions[0].cases if c['fixture']]
    assert built and built[0]['result'] == 'pass'       # what finished before the interrupt
    leftovers = subprocess.run(['pgrep', '-f', 'pingpong-c --sizes 1:1048576'],
                               capture_output=True, text=True)
    assert not leftovers.stdout.strip()                 # nothing orphaned
