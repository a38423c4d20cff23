"""``commcheck run`` with a shared history store (a real PostgreSQL server, tests/pgserver.py)
that is stopped while the run is under way: the run ends with its checks' exit code and says
the session waits; after a restart ``commcheck push`` lands it, its values byte-identical to
what ReFrame stored locally."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import STACKS, commcheck_cmd, needs_stacks
from tests.store.test_push import counts, env_for, init, local_values, push, stored_values

pytestmark = [needs_stacks(), pytest.mark.integration]


def test_store_stopped_during_a_run_then_the_push_lands_the_session(pg_store, tmp_path):
    server, db = pg_store
    init(server, db)
    env = env_for(server, db, 'commcheck_writer', tmp_path,
                  RFM_REFERENCE_PREFIX=str(tmp_path / 'norefs'))
    (tmp_path / 'norefs').mkdir()
    run = subprocess.Popen([commcheck_cmd(), 'run', '--no-report', '--', '-n', 'PingPong%lang=c',
                            '--mode', 'quick', '-p', STACKS[0].name], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ps = subprocess.run(['ps', '-eww', '-o', 'args'], capture_output=True, text=True).stdout
    server.stop('fast')                 # the store goes away while ReFrame builds and runs
    try:
        out, err = run.communicate(timeout=1800)
    finally:
        server.start()
    assert run.returncode == 0, out[-3000:] + err[-2000:]
    spool = Path(env['COMMCHECK_REPORTS']) / 'results.db'
    said = [line for line in err.splitlines() if 'history store' in line]
    assert len(said) == 1 and said[0].startswith('commcheck: history store unavailable: ')
    assert f'; 1 session waits in {spool}' in said[0]
    done = push(env)
    assert done.returncode == 0 and done.stdout.count('pushed ') == 1, done.stderr
    stored, local = stored_values(server, db), local_values(spool)
    assert stored.keys() == local.keys() and len(local) == counts(server, db)[1] > 0
    assert all(float(stored[k][0]).hex() == float(local[k][0]).hex() for k in local)
    # No password in the run's and the push's output, the process lines, or any file the run
    # wrote (run report, perflogs, ReFrame's log and database, the ledger).
    written = [p.read_bytes() for p in Path(env['COMMCHECK_REPORTS']).rglob('*') if p.is_file()]
    assert 'commcheck run' in ps and written
    for secret in server.passwords.values():
        assert secret not in out + err + ps + done.stdout + done.stderr
        assert not [b for b in written if secret.encode() in b]
