"""A throw-away PostgreSQL 15 server for the tests of the shared history store: Debian's
``postgresql`` package (``initdb`` + ``pg_ctl`` run as the ``postgres`` user), its data
directory and unix socket in a temporary directory (TCP on 127.0.0.1 only when asked: the
documents' test), password (scram-sha-256) logins only, the passwords in a ``PGPASSFILE`` of
mode 0600 and nowhere else.

The fixtures in ``tests/conftest.py`` start one server per test session (``pg_server``) and
give each test a database of its own with the store's roles (``pg_store``), set up exactly as
docs/shared-history.md sets a store up: ``createdb`` and ``psql -f config/history/roles.sql``
as the ``postgres`` user (the database is the superuser's, not the owner role's), the roles'
passwords typed at ``\\password``'s prompt. Under ``CI=true`` a missing server is a failure,
elsewhere a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

from commcheck.results import pgstore
from tests import terminal

PG_BIN = Path(os.environ.get('COMMCHECK_TEST_PG_BIN', '/usr/lib/postgresql/15/bin'))
ROLES = ('commcheck_owner', 'commcheck_writer', 'commcheck_reader')
SUPERUSER = 'postgres'


def missing() -> str | None:
    """Why no server can be started here, or None."""
    if not (PG_BIN / 'initdb').exists():
        return f'no PostgreSQL server at {PG_BIN} (apt-get install postgresql)'
    if os.geteuid() == 0 and not shutil.which('runuser'):
        return 'runuser not found (util-linux)'
    return None


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class PgServer:
    """One server: start, stop (``pg_ctl stop -m fast``, as the acceptance test does), restart;
    its addresses, passwords and a PGPASSFILE."""

    def __init__(self, tcp: bool = False):
        self.root = Path(tempfile.mkdtemp(prefix='commcheck-pg-'))
        self.data, self.socket, self.log = self.root / 'data', self.root / 'socket', \
            self.root / 'server.log'
        #: also listening on 127.0.0.1 (a free port), as a database host clients reach by TCP
        self.tcp = tcp
        self.port = free_port() if tcp else 5432
        self.passwords = {role: secrets.token_hex(16) for role in (SUPERUSER, *ROLES)}
        self.passfile = self.root / 'pgpass'
        self.passfile.write_text(''.join(f'*:*:*:{role}:{word}\n'
                                         for role, word in self.passwords.items()))
        self.passfile.chmod(0o600)
        self._count = 0

    @staticmethod
    def as_postgres(*cmd: str) -> list[str]:
        """``cmd`` run as the ``postgres`` user (as the current user when not root)."""
        return ['runuser', '-u', 'postgres', '--', *cmd] if os.geteuid() == 0 else list(cmd)

    def _as_postgres(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(self.as_postgres(*cmd), check=check, capture_output=True,
                              text=True, timeout=120, env=self.host_env())

    def host_env(self) -> dict:
        """The environment of a command run on the database host as ``postgres``: this
        server's socket and port, the superuser's password in a PGPASSFILE of its own."""
        env = {k: v for k, v in os.environ.items() if not k.startswith('PG')}
        env.update(PGHOST=str(self.socket), PGPORT=str(self.port), PGUSER=SUPERUSER,
                   PGPASSFILE=str(self.root / 'pgpass.postgres'))
        return env

    def init(self) -> None:
        pwfile = self.root / 'initdb.pw'
        pwfile.write_text(self.passwords[SUPERUSER] + '\n')
        self.socket.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, 'postgres')
            for path in (pwfile, self.socket):
                shutil.chown(path, 'postgres')
        self.root.chmod(0o711)
        superuser = self.root / 'pgpass.postgres'
        superuser.write_text(f'*:*:*:{SUPERUSER}:{self.passwords[SUPERUSER]}\n')
        superuser.chmod(0o600)
        if os.geteuid() == 0:
            shutil.chown(superuser, 'postgres')
        self._as_postgres(str(PG_BIN / 'initdb'), '-D', str(self.data), '-U', SUPERUSER,
                          '--pwfile', str(pwfile), '--auth=scram-sha-256', '-E', 'UTF8',
                          '--locale=C.UTF-8', '--no-sync')
        pwfile.unlink()

    def start(self) -> None:
        # fsync off: a throw-away cluster need not survive a crash of the machine, and its
        # stops (a checkpoint each) and commits do not wait for a disk shared with other jobs.
        listen = '127.0.0.1' if self.tcp else ''
        opts = (f"-c unix_socket_directories={self.socket} -c listen_addresses='{listen}' "
                f"-p {self.port} -c fsync=off")
        self._as_postgres(str(PG_BIN / 'pg_ctl'), '-D', str(self.data), '-l', str(self.log),
                          '-w', '-t', '60', '-o', opts, 'start')

    def stop(self, mode: str = 'fast') -> None:
        self._as_postgres(str(PG_BIN / 'pg_ctl'), '-D', str(self.data), '-w', '-m', mode,
                          'stop', check=False)

    def remove(self) -> None:
        self.stop('fast')
        shutil.rmtree(self.root, ignore_errors=True)

    # -- addresses --------------------------------------------------------------------------
    def url(self, role: str, db: str = 'postgres') -> str:
        """A libpq URL without a password (libpq finds it in :attr:`passfile`)."""
        return f'postgresql://{role}@/{db}?host={self.socket}&port={self.port}'

    def env(self, base: dict | None = None) -> dict:
        """An environment whose libpq finds the passwords (and no other PG settings)."""
        env = {k: v for k, v in (base if base is not None else os.environ).items()
               if not k.startswith('PG')}
        env['PGPASSFILE'] = str(self.passfile)
        return env

    def connect(self, role: str = SUPERUSER, db: str = 'postgres'):
        import psycopg
        return psycopg.connect(self.url(role, db), autocommit=True, passfile=str(self.passfile))

    def new_database(self) -> str:
        """A fresh database with the store's roles and no tables, made as
        docs/shared-history.md makes one: as ``postgres``, ``createdb``, then
        ``config/history/roles.sql``, then (the first time) ``\\password`` for each role."""
        self._count += 1
        name = f'commcheck_{os.getpid()}_{self._count}'
        roles = self.root / 'roles.sql'         # where the postgres user can read it
        if not roles.exists():
            shutil.copyfile(pgstore.ROLES_SQL, roles)
            roles.chmod(0o644)
        self._as_postgres(str(PG_BIN / 'createdb'), name)
        self._as_postgres(str(PG_BIN / 'psql'), '-v', 'ON_ERROR_STOP=1', '-d', name,
                          '-f', str(roles))
        if self._count == 1:
            for role in ROLES:
                self._password(name, role)
        return name

    def _password(self, db: str, role: str) -> None:
        code, said = terminal.run(self.as_postgres(str(PG_BIN / 'psql'), '-d', db, '-c',
                                                   f'\\password {role}'),
                                  terminal.password_prompts(self.passwords), timeout=60,
                                  env=self.host_env())
        if code != 0:
            raise RuntimeError(f'psql \\password {role}: exit {code}: {said.strip()}')
