"""Shared fixtures: the stacks of this machine, the kernels built for each, isolated state."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from commcheck import paths
from commcheck.site import SiteError, discover, kbuild

REPO = paths.REPO_ROOT
BIN = Path(sys.executable).parent
IN_CI = os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


def local_site():
    """The discovered local site. Only "no MPI at all" may skip the MPI tests, and never in
    CI: any other error in discovery is a bug, and it fails the session instead of hiding."""
    try:
        return discover.local_site()
    except SiteError as err:
        if IN_CI or 'no MPI found' not in str(err):
            raise
        return None


SITE = local_site()
ALL_STACKS = list(SITE.stacks) if SITE else []
#: Stacks whose kernels are the compiled C (and Fortran) programs.
STACKS = [s for s in ALL_STACKS if 'c' in s.tested_languages]
#: The stacks every kernel is tested on exhaustively (bad input, self-tests, mutants, the
#: managed languages): the distribution's own MPICH and Open MPI with gcc, addressed by their
#: own wrappers. Every other stack runs every check in the main job (integration tests).
REFERENCE_STACKS = [s for s in STACKS if s.compiler.family == 'gnu' and s.mpi.prefix == '/usr'
                    and s.mpi.flavour in ('mpich', 'openmpi')]


def needs_stacks():
    return pytest.mark.skipif(not STACKS, reason='no MPI stack found on this machine')


@pytest.fixture(scope='session')
def kernel_builds(tmp_path_factory):
    """Each stack's kernels, built with CMake and the stack's own wrappers: stack name -> bin
    (kept in the kernel cache, keyed by their inputs: a session after one that built the same
    sources with the same stacks reuses them)."""
    return {s.name: kbuild.cached_cmake_build(s, tmp_path_factory.mktemp(f'build-{s.name}'))[0]
            for s in REFERENCE_STACKS}


def mpirun(stack, ranks: int, program: Path, *args: str, timeout: int = 120):
    return kbuild.launch(stack, ranks, program, *args, timeout=timeout)


def relayed(done, code: int, stack, ranks: int) -> bool:
    """The launch exited with the kernel's ``code``, as its launcher relays it. Debian MPICH
    4.0.2's mpiexec relays a 1-rank job that ends after its run (a validation failure, exit
    3 through MPI_Abort or a plain exit) as 1 now and then: 1/40, 2/40 and 1/60 runs here on
    2026-11-26 (usage errors, before the run: 40/40 exit 2)."""
    return done.returncode == code or (
        done.returncode == 1 and ranks == 1 and stack.mpi.flavour == 'mpich')


@pytest.fixture
def isolated_env(tmp_path):
    """Environment for a commcheck/reframe subprocess whose state and reports go to tmp."""
    env = dict(os.environ)
    env['COMMCHECK_STATE'] = str(tmp_path / 'state')
    env['COMMCHECK_REPORTS'] = str(tmp_path / 'reports')
    env['PATH'] = f'{BIN}{os.pathsep}{env.get("PATH", "")}'
    env.pop('RFM_REFERENCE_PREFIX', None)
    return env


def commcheck_cmd() -> str:
    return shutil.which('commcheck', path=str(BIN)) or 'commcheck'


@pytest.fixture(scope='session')
def pg_server():
    """A real PostgreSQL 15 server for this test session (tests/pgserver.py), stopped and
    removed at the end. Missing: a skip, and under CI=true a failure."""
    yield from running_pg_server()


def running_pg_server(tcp: bool = False):
    """A started PostgreSQL server (``tcp``: also on 127.0.0.1), removed when the generator
    ends; missing: a skip, and under CI=true a failure."""
    from tests import pgserver
    why = pgserver.missing()
    if why:
        if IN_CI:
            pytest.fail(f'CI=true and {why}')
        pytest.skip(why)
    server = pgserver.PgServer(tcp=tcp)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.remove()


@pytest.fixture
def pg_store(pg_server):
    """A database of its own on ``pg_server``, with the store's roles (owner, writer, reader)
    but no tables yet: (server, database name). ``server.url(role, db)`` addresses it;
    ``server.env()`` gives a subprocess the PGPASSFILE."""
    return pg_server, pg_server.new_database()


def pytest_terminal_summary(terminalreporter):
    """How many of the documents' shell blocks the tests run and how many are marked, when
    tests/unit/test_docs.py counted them."""
    from tests import docblocks
    if docblocks.COUNTED:
        c = docblocks.COUNTED
        terminalreporter.write_line(
            f'documents\' shell blocks: {c["run"]} run by tests/integration/test_doc_blocks.py, '
            f'{c["marked"]} marked <!-- needs: ... -->, {c["pending"]} pending marks '
            f'({", ".join(docblocks.PENDING)})')
