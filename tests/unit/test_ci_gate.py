"""``config/ci/gate.py``, the CI pipeline's gate job: the sessions its test jobs' run reports
name, judged by ``commcheck compare`` with the JUnit verdicts, the JSON and the report kept, and
compare's exit code as its own; a run report it cannot read is one ERROR line and exit 2, never
a verdict on part of the pipeline. Here on a history made from a real session (the report
tests' fixture) in a results database; tests/integration/test_ci_pipeline.py runs it after a
real pipeline, on the shared store."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from commcheck import paths
from commcheck.results import history_gen, store
from tests.unit.test_history_index import SOURCE

GATE = paths.CONFIG_DIR / 'ci' / 'gate.py'


def gate(env, cwd, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GATE), *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def run_report(path, uuid) -> str:
    path.write_text(json.dumps({'session_info': {'uuid': uuid}, 'runs': []}))
    return path.name


@pytest.fixture(scope='module')
def history(tmp_path_factory):
    """Two baseline sessions, then two sessions of a pipeline whose MPICH got slower."""
    base = tmp_path_factory.mktemp('history')
    change = history_gen.Change(at=2, environ='gnu-mpich4', field='mpi_version', before='',
                                after='4.1.6', factor=1.6)
    db = base / 'results.db'
    history_gen.generate(history_gen.source_report(SOURCE), 4, db, repeat=8, changes=[change])
    return db, [s.uuid for s in store.read_db(db)]


def test_the_gate_judges_the_pipelines_sessions_and_keeps_its_files(history, isolated_env,
                                                                     tmp_path):
    db, uuids = history
    reports = [run_report(tmp_path / f'Job_{i}-report.json', u) for i, u in enumerate(uuids[2:])]
    done = gate(isolated_env, tmp_path, '--out', 'gate', *reports, reports[0], '--', '--db',
                str(db), '--baseline-session', uuids[0], '--baseline-session', uuids[1])
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    assert f'gate: 2 session(s) of this pipeline: {uuids[2]} {uuids[3]}' in done.stdout
    assert done.stdout.rstrip().endswith('gate: commcheck compare exited 1: a judged '
                                         'regression (compare), a failed check (run)')
    record = json.loads((tmp_path / 'gate' / 'gate.json').read_text())
    assert record['sessions'] == uuids[2:]
    root = ET.parse(tmp_path / 'gate' / 'junit.xml').getroot()
    assert int(root.get('tests')) == len(record['comparisons'])
    assert int(root.get('failures')) == sum(record['counts'][v] for v in
                                            ('MPI regressed', 'both', 'regressed')) > 0
    assert list((tmp_path / 'gate' / 'report').rglob('*.html'))


@pytest.mark.parametrize('content, said', [
    (None, 'no such run report'), ('{"runs": [', 'not a readable ReFrame run report'),
    ('{"session_info": {"uuid": "not-a-uuid"}}', 'no session uuid in session_info'),
    ('[]', 'no session uuid in session_info')])
def test_a_run_report_it_cannot_read_is_one_line_and_no_verdict(isolated_env, tmp_path,
                                                                content, said):
    good = run_report(tmp_path / 'Good-report.json', '7c64cf11-7400-4d7f-ae7e-fea766deed85')
    bad = tmp_path / 'Bad-report.json'
    if content is not None:
        bad.write_text(content)
    done = gate(isolated_env, tmp_path, good, bad.name)
    assert done.returncode == 2 and done.stdout == ''
    (line,) = done.stderr.splitlines()
    assert line.startswith(f'ERROR: gate: {bad.name}: {said}')
    assert not (tmp_path / 'gate').exists()


PGPASS = paths.CONFIG_DIR / 'ci' / 'pgpass.sh'


def test_pgpass_writes_the_masked_password_to_a_private_passfile_and_nowhere_else(tmp_path):
    """libpq's format (``:`` and ``\\`` escaped), mode 0600, not in an xtrace, and no process
    the job starts inherits the variable; without the variable nothing is written."""
    secret = 'pa:ss\\word 42'
    env = {'PATH': '/usr/bin:/bin', 'COMMCHECK_HISTORY_PASSWORD': secret}
    done = subprocess.run(['bash', '-c', f'set -x; . {PGPASS}; echo "file=$PGPASSFILE"; env'],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    passfile = tmp_path / '.commcheck-pgpass'
    assert f'file={passfile}' in done.stdout
    assert passfile.read_text() == '*:*:*:*:pa\\:ss\\\\word 42\n'
    assert passfile.stat().st_mode & 0o777 == 0o600
    assert secret not in done.stdout + done.stderr and 'pa\\:ss' not in done.stderr
    assert 'COMMCHECK_HISTORY_PASSWORD' not in done.stdout
    runner = dict(env, RUNNER_TEMP=str(tmp_path / 'runner'))
    (tmp_path / 'runner').mkdir()
    subprocess.run(['bash', '-c', f'. {PGPASS}'], cwd=tmp_path, env=runner, check=True)
    assert (tmp_path / 'runner' / '.commcheck-pgpass').read_text() == passfile.read_text()
    none = subprocess.run(['bash', '-c', f'. {PGPASS}; echo "[${{PGPASSFILE-}}]"'],
                          cwd=tmp_path / 'runner', env={'PATH': '/usr/bin:/bin'},
                          capture_output=True, text=True, timeout=60)
    assert none.stdout == '[]\n'
