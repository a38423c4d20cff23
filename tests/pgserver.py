"""A throw-away PostgreSQL 15 server for the tests of the shared history store: Debian's
``postgresql`` package (``initdb`` + ``pg_ctl`` run as the ``postgres`` user), its data
directory and unix socket in a temporary directory, no TCP, password (scram-sha-256) logins
only, the passwords in a ``PGPASSFILE`` of mode 0600 and nowhere else.

The fixtures in ``tests/conftest.py`` start one server per test session (``pg_server``) and
give each test a database of its own with the store's roles (``pg_store``). Under ``CI=true``
a missing server is a failure, elsewhere a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from commcheck.results import pgstore

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


class PgServer:
    """One server: start, stop (``pg_ctl stop -m fast``, as the acceptance test does), restart;
    its addresses, passwords and a PGPASSFILE."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix='commcheck-pg-'))
        self.data, self.socket, self.log = self.root / 'data', self.root / 'socket', \
            self.root / 'server.log'
        self.port = 5432
        self.passwords = {role: secrets.token_hex(16) for role in (SUPERUSER, *ROLES)}
        self.passfile = self.root / 'pgpass'
        self.passfile.write_text(''.join(f'*:*:*:{role}:{word}\n'
                                         for role, word in self.passwords.items()))
        self.passfile.chmod(0o600)
        self._count = 0

    def _as_postgres(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        prefix = ['runuser', '-u', 'postgres', '--'] if os.geteuid() == 0 else []
        return subprocess.run([*prefix, *cmd], check=check, capture_output=True, text=True,
                              timeout=120)

    def init(self) -> None:
        pwfile = self.root / 'initdb.pw'
        pwfile.write_text(self.passwords[SUPERUSER] + '\n')
        self.socket.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.root, 'postgres')
            for path in (pwfile, self.socket):
                shutil.chown(path, 'postgres')
        self.root.chmod(0o711)
        self._as_postgres(str(PG_BIN / 'initdb'), '-D', str(self.data), '-U', SUPERUSER,
                          '--pwfile', str(pwfile), '--auth=scram-sha-256', '-E', 'UTF8',
                          '--locale=C.UTF-8', '--no-sync')
        pwfile.unlink()

    def start(self) -> None:
        # fsync off: a throw-away cluster need not survive a crash of the machine, and its
        # stops (a checkpoint each) and commits do not wait for a disk shared with other jobs.
        opts = (f"-c unix_socket_directories={self.socket} -c listen_addresses='' "
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
        """A fresh database owned by the store's owner, with the store's roles
        (``config/history/roles.sql``, as docs/shared-history.md sets a store up)."""
        self._count += 1
        name = f'commcheck_{os.getpid()}_{self._count}'
        with self.connect() as conn:
            if self._count == 1:
                self._roles(conn)
            conn.execute(f'CREATE DATABASE {name} OWNER commcheck_owner')
        with self.connect(db=name) as conn:
            conn.execute(pgstore.ROLES_SQL.read_text(encoding='utf-8'))
        return name

    def _roles(self, conn) -> None:
        from psycopg import sql
        conn.execute(pgstore.ROLES_SQL.read_text(encoding='utf-8'))
        for role in ROLES:
            conn.execute(sql.SQL('ALTER ROLE {} PASSWORD {}').format(
                sql.Identifier(role), sql.Literal(self.passwords[role])))
