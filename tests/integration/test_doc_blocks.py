"""The documents' shell blocks, run as written (tests/docblocks.py: which blocks, as whom, the
placeholders), each line's exit code checked against what the document says, in a copy of the
repository (its documents and config/ copied, the rest linked) with a home of its own:

- ``store``: the shared history store's whole set-up from docs/shared-history.md on Debian's
  PostgreSQL server (a fresh one, reached by TCP as ``db.site``): ``createdb`` and
  ``roles.sql`` as ``postgres``, the passwords typed at ``\\password``'s prompts, a PGPASSFILE,
  ``push --init``, a run that pushes, the pushes, the readers (``sessions``, ``baseline``,
  ``compare``, ``history``, ``report``, ``archive``), then docs/ci.md's baseline by session;
- ``site``: a site file of this machine, checked, listed and run (the README, config/sites);
- ``retention``: the archive of docs/history-at-scale.md;
- ``slurm``: .ci/README.md's ``slurm-cluster`` commands, on a cluster of its own prefix.

About 2 minutes in all here (store 70 s, site 40 s, retention 10 s, slurm 20 s).
"""

from __future__ import annotations

import datetime
import os
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from commcheck import paths
from commcheck.results import history_gen
from tests import docblocks, terminal
from tests.conftest import needs_stacks, running_pg_server
from tests.store import histories

pytestmark = [pytest.mark.integration]

#: What the copy of the repository copies (the blocks write there); the rest is linked.
COPIED = ('README.md', 'docs', 'config', '.ci')
#: The settings of this process a person's shell would not have.
DROPPED = ('COMMCHECK_', 'RFM_', 'PG', 'VIRTUAL_ENV', 'OSU_')


@pytest.fixture
def scene():
    """A copy of the repository and a home, both readable by the ``postgres`` user (the
    database host's blocks read roles.sql there); removed at the end."""
    top = Path(tempfile.mkdtemp(prefix='commcheck-docs-'))
    top.chmod(0o755)
    root, home = top / 'commcheck', top / 'home'
    root.mkdir()
    home.mkdir()
    for entry in paths.REPO_ROOT.iterdir():
        if entry.name in COPIED:
            (shutil.copytree if entry.is_dir() else shutil.copy)(entry, root / entry.name)
        elif entry.name not in ('.git', '.state', 'reports'):
            (root / entry.name).symlink_to(entry)
    (root / 'reports').mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED)}
    env.update(HOME=str(home), TERM='dumb', COMMCHECK_ROOT=str(root),
               COMMCHECK_WHEELS_DIR=str(paths.WHEELS_DIR), COMMCHECK_CACHE=str(paths.CACHE_DIR),
               PATH=os.pathsep.join((str(Path(sys.executable).parent), env.get('PATH', ''),
                                     '/usr/sbin', '/sbin')))
    yield SimpleNamespace(top=top, root=root, home=home, env=env, values={}, said=[])
    shutil.rmtree(top, ignore_errors=True)


def run_scenario(scene, name: str, answers=(), as_postgres=None, postgres_env=None) -> str:
    """The scenario's blocks in order, each group of one user in one shell at a terminal;
    fails naming every line whose exit code the document does not allow. Its output."""
    problems = []
    for n, (user, group) in enumerate(docblocks.in_order(scene.root, docblocks.RUN[name])):
        host = user == docblocks.DBHOST
        found, out = docblocks.run_group(
            group, scene.values, scene.top / f'codes-{n}', answers,
            wrap=(lambda argv: as_postgres(*argv)) if host else list,
            env=postgres_env if host else scene.env, cwd=scene.root)
        scene.said.append(out)
        problems += found
    assert not problems, '\n'.join(problems) + '\n--- output:\n' + '\n'.join(scene.said)[-6000:]
    return '\n'.join(scene.said)


def unix(day: str) -> float:
    return datetime.datetime.fromisoformat(day).replace(tzinfo=datetime.timezone.utc).timestamp()


# -- the shared history store ---------------------------------------------------------------
@pytest.fixture
def db_host():
    """A PostgreSQL server of its own (its roles' passwords are the blocks' to set), reached
    by TCP: the database host. Missing: a skip, and under CI=true a failure (as pg_server)."""
    yield from running_pg_server(tcp=True)


def eiger(scene, n: int = 21) -> list[str]:
    """``other/results.db``: n nightly sessions of cluster eiger (two launches of each test
    case, as CI's jobs make several), the first on 2025-12-20 (12 before 2026-01-01, the
    archive's date); their uuids, oldest first."""
    gen = history_gen.Generator(histories.source(), n, cluster='eiger', seed=45, changes=[],
                                start=unix('2025-12-20T02:00:00'), repeat=2)
    sessions = [gen.session(i) for i in range(n)]
    scene.values['other/results.db'] = str(scene.top / 'other.db')
    history_gen.write_db(scene.top / 'other.db', sessions)
    return [s['session_info']['uuid'] for s in sessions]


@needs_stacks()
def test_the_shared_store_is_set_up_and_used_as_documented(scene, db_host):
    server = db_host
    uuids = eiger(scene)
    words = {role.split('_')[1].upper() + '_PASSWORD': server.passwords[role]
             for role in ('commcheck_owner', 'commcheck_writer', 'commcheck_reader')}
    scene.values.update(words, **{'5432': str(server.port),
                                  '/path/to/pgpass': str(scene.home / '.pgpass'),
                                  '3f2a9c1e': uuids[-1][:8], '<uuid>': uuids[-3:]})
    scene.env.update(PGHOSTADDR='127.0.0.1', PGPORT=str(server.port))
    host = dict(server.host_env(), PATH=scene.env['PATH'])
    out = run_scenario(scene, 'store', terminal.password_prompts(server.passwords),
                       server.as_postgres, host)
    assert 'history store postgresql://commcheck_owner@db.site/commcheck: schema version 1 ' \
           '(created)' in out
    assert 'commcheck: history store postgresql://commcheck_writer@db.site/commcheck: 1 ' \
           'session(s) pushed' in out                               # the run pushed its own
    with server.connect(db='commcheck') as conn:
        held = dict(conn.execute('SELECT cluster, count(*) FROM commcheck.sessions '
                                 'GROUP BY cluster').fetchall())
    assert held == {'local': 1, 'eiger': 21 - 12}                 # 12 of eiger's archived
    written = ['config/references/eiger.baseline.json', 'eiger.json', 'reports/archive.db']
    assert [w for w in written if not (scene.root / w).is_file()] == []
    assert list((scene.root / 'reports').glob(f'*{uuids[-1][:8]}*/index.html'))
    for secret in server.passwords.values():
        assert secret not in out


# -- a site of one's own ----------------------------------------------------------------------
@needs_stacks()
def test_a_site_file_is_made_checked_and_run_as_documented(scene):
    scene.values['$EDITOR'] = 'true'
    run_scenario(scene, 'site')
    assert (scene.root / 'config' / 'sites' / 'mycluster.yaml').is_file()
    assert not (paths.CONFIG_DIR / 'sites' / 'mycluster.yaml').exists()   # the copy's, only


# -- retention ---------------------------------------------------------------------------------
def test_old_sessions_are_archived_as_documented(scene):
    """Seven nightly sessions around the new year in reports/results.db: the four of 2025
    move to reports/archive.db, which reads like the live database."""
    from commcheck.results import store
    gen = history_gen.Generator(histories.source(), 7, seed=46, changes=[],
                                start=unix('2025-12-28T02:00:00'))
    history_gen.write_db(scene.root / 'reports' / 'results.db',
                         [gen.session(i) for i in range(7)])
    run_scenario(scene, 'retention')
    assert len(store.ResultsDB(scene.root / 'reports' / 'archive.db').stored()) == 4
    assert len(store.ResultsDB(scene.root / 'reports' / 'results.db').stored()) == 3


# -- the CI's Slurm cluster ----------------------------------------------------------------------
def test_the_slurm_cluster_commands_work_as_documented(scene):
    from tests.integration.test_slurm import cluster_prerequisites, require
    require(cluster_prerequisites())
    state = scene.top / 'slurm'
    job = scene.top / 'job.sh'
    job.write_text('#!/bin/sh\nhostname\n')
    job.chmod(0o755)
    scene.values.update({'job.sh': str(job), 'cc-n3': 'dt-n3'})
    scene.env.update(COMMCHECK_SLURM_PREFIX='dt', COMMCHECK_SLURM_SUBNET='10.198.0',
                     COMMCHECK_SLURM_DIR=str(state))
    try:
        out = run_scenario(scene, 'slurm')
    finally:
        terminal.run([str(paths.REPO_ROOT / '.ci' / 'slurm-cluster'), 'stop'], env=scene.env,
                     timeout=120)
    assert all(f'dt-n{i}' in out for i in range(1, 5))               # srun -N4 hostname
