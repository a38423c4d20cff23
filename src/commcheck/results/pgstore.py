"""The shared history store: one PostgreSQL database that every cluster and CI runner of a site
pushes its sessions to, and that ``baseline``, ``compare``, ``history``, ``report`` and
``archive`` can read.

ReFrame's results database (``reports/results.db``) stays the record of each run and is the
*spool*: a session lands there first, then ``commcheck push`` (or ``commcheck run`` at its end)
writes it to the store in one transaction keyed by its uuid; a second push of it is a no-op.

Where: :func:`store_address` (``--db``, else ``COMMCHECK_HISTORY``, else the site file's
``history:``); no store named, nothing of this module runs. Addresses never carry a password
(:func:`commcheck.dburl.password_problem`); every address printed goes through
:func:`commcheck.dburl.redact`.

Schema (PostgreSQL schema ``commcheck``, version :data:`SCHEMA_VERSION`, in ``commcheck.meta``;
created or migrated by :func:`ensure_schema` under ``pg_advisory_xact_lock(SCHEMA_LOCK)``, so
many first runs at once all succeed; a store of a newer version is refused in one line):

``commcheck.meta``
    ``name text PRIMARY KEY, value text``: ``schema_version`` (an integer as text).
``commcheck.sessions``, one row a session:
    ``uuid uuid PRIMARY KEY`` (ReFrame's session uuid); ``site text`` (the site file's name,
    ``--site``/``COMMCHECK_SITE``, else ``local``); ``cluster text`` (the ReFrame system its
    test cases ran on); ``host text`` (``session_info.hostname``: where ReFrame ran);
    ``start_unix``, ``end_unix double precision`` (ReFrame's ``time_start_unix``,
    ``time_end_unix``) and ``time_start timestamptz`` (generated from ``start_unix``);
    ``record text``: the session's JSON exactly as ReFrame stored it in its results database
    (``sessions.json_blob``) or wrote it as a run report; ``format text`` (the record's
    ``session_info.data_version``); ``source text`` (``results database`` or ``run report``);
    ``cases integer``, ``measurements integer`` (how many test cases and measurement rows);
    ``problem text`` (NULL, or why the record could not be decoded: then it has no
    measurements and readers skip it); ``pushed_at timestamptz``, ``pushed_by text`` (role).
``commcheck.provenances``, each distinct provenance stored once:
    ``id bigint`` identity primary key; ``digest text UNIQUE`` (sha256 of its canonical JSON);
    ``provenance jsonb`` (an object: field -> text, as ``Sample.provenance`` holds it).
``commcheck.measurements``, one row a variable per launch (the rows the local sample index
holds, derived by the same code: :func:`commcheck.results.sample_index.numbered`):
    ``session uuid`` (-> sessions, ``ON DELETE CASCADE``); ``launch integer`` (0.. per
    session and series, in the record's order); ``time_unix double precision`` (the job's
    completion) and ``time timestamptz`` (generated); ``cluster``, ``partition``, ``environ``,
    ``test`` (display name without the repeat number), ``variable``, ``unit``, ``result text``;
    ``value double precision``; ``oversubscribed boolean``; ``provenance bigint``
    (-> provenances). Index ``measurements_window (cluster, variable, test, environ,
    time_unix)`` for the gate's window, and ``measurements_by_session (session)``.

A session's row and its measurements are written in one transaction (provenances first, each
in a short transaction of its own: a provenance no session uses yet is harmless), so a reader
sees a session whole or not at all. Roles: ``config/history/roles.sql`` (owner: DDL, archive;
writer: INSERT and SELECT only; reader: SELECT).

Failures: :class:`StoreUnavailable` (the server cannot be reached or went away: retry later,
the sessions wait in the spool) and :class:`StoreRefused` (a :class:`UserError`: bad
credentials, a newer schema, missing privileges: retrying cannot help). Both messages are one
line with the address redacted.
"""

from __future__ import annotations

import hashlib

from commcheck import dburl, paths
from commcheck.errors import UserError

SCHEMA_VERSION = 1              #: bumped with every migration step added to MIGRATIONS
SCHEMA = 'commcheck'            #: the PostgreSQL schema (namespace) of every table
#: pg_advisory_xact_lock key taken while the schema is created or migrated
SCHEMA_LOCK = int.from_bytes(hashlib.sha256(b'commcheck.schema').digest()[:8], 'big') >> 1
CONNECT_TIMEOUT = 10            #: seconds for libpq to connect (unless the address sets one)
STATEMENT_TIMEOUT = '120s'      #: longest statement (a push of a year's largest session: ~1 s)
LOCK_TIMEOUT = '30s'            #: longest wait for a lock (a schema migration, a twin push)
IDLE_TIMEOUT = '300s'           #: a client that stalls inside a transaction is cut off
#: Test hook: seconds a push sleeps after its inserts, before COMMIT (the kill test uses it).
PAUSE_ENV = 'COMMCHECK_TEST_PUSH_PAUSE'
ROLES_SQL = paths.CONFIG_DIR / 'history' / 'roles.sql'

MEASUREMENT_COLUMNS = ('session', 'launch', 'time_unix', 'cluster', 'partition', 'environ',
                       'test', 'variable', 'value', 'unit', 'result', 'oversubscribed',
                       'provenance')

#: MIGRATIONS[v] takes a store from version v to v + 1 (0: no schema yet).
MIGRATIONS: tuple[tuple[str, ...], ...] = ((
    f'CREATE SCHEMA IF NOT EXISTS {SCHEMA}',
    f'CREATE TABLE {SCHEMA}.meta (name text PRIMARY KEY, value text NOT NULL)',
    f'''CREATE TABLE {SCHEMA}.sessions (
        uuid uuid PRIMARY KEY,
        site text NOT NULL,
        cluster text NOT NULL,
        host text NOT NULL,
        start_unix double precision NOT NULL,
        end_unix double precision,
        time_start timestamptz GENERATED ALWAYS AS (to_timestamp(start_unix)) STORED,
        record text NOT NULL,
        format text NOT NULL,
        source text NOT NULL,
        cases integer NOT NULL,
        measurements integer NOT NULL,
        problem text,
        pushed_at timestamptz NOT NULL DEFAULT now(),
        pushed_by text NOT NULL DEFAULT current_user)''',
    f'CREATE INDEX sessions_by_cluster ON {SCHEMA}.sessions (cluster, start_unix)',
    f'CREATE INDEX sessions_by_start ON {SCHEMA}.sessions (start_unix)',
    f'''CREATE TABLE {SCHEMA}.provenances (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        digest text NOT NULL UNIQUE,
        provenance jsonb NOT NULL)''',
    f'''CREATE TABLE {SCHEMA}.measurements (
        session uuid NOT NULL REFERENCES {SCHEMA}.sessions (uuid) ON DELETE CASCADE,
        launch integer NOT NULL,
        time_unix double precision NOT NULL,
        time timestamptz GENERATED ALWAYS AS (to_timestamp(time_unix)) STORED,
        cluster text NOT NULL,
        partition text NOT NULL,
        environ text NOT NULL,
        test text NOT NULL,
        variable text NOT NULL,
        value double precision NOT NULL,
        unit text NOT NULL,
        result text NOT NULL,
        oversubscribed boolean NOT NULL,
        provenance bigint NOT NULL REFERENCES {SCHEMA}.provenances (id))''',
    f'CREATE INDEX measurements_window ON {SCHEMA}.measurements '
    f'(cluster, variable, test, environ, time_unix)',
    f'CREATE INDEX measurements_by_session ON {SCHEMA}.measurements (session)',
),)
assert len(MIGRATIONS) == SCHEMA_VERSION


class StoreUnavailable(Exception):
    """The store cannot be reached now (refused, timed out, shut down): the sessions wait in
    the spool and a later push lands them. The message is one line, the address redacted."""


class StoreRefused(UserError):
    """The store refuses us in a way a retry cannot mend (authentication, a newer schema,
    privileges, a missing database): one line saying what to fix."""


# -- where the store is ---------------------------------------------------------------------
def store_address(explicit: str | None = None, site_history: str | None = None
                  ) -> tuple[str, str] | None:
    """(address, where it was set) of the store: ``--db``, else ``COMMCHECK_HISTORY``, else
    the site file's ``history:``; None when none is set. An address with a password is
    refused (:class:`StoreRefused`, the password not printed)."""
    for value, where in ((explicit, '--db'), (dburl.from_environment(), dburl.ENV),
                         (site_history, 'history: of the site file')):
        if value and value.strip():
            problem = dburl.password_problem(value.strip(), where)
            if problem:
                raise StoreRefused(problem)
            return value.strip(), where
    return None


# -- connecting -----------------------------------------------------------------------------
def _parameters(address: str, purpose: str) -> dict:
    from psycopg.conninfo import conninfo_to_dict
    try:
        given = conninfo_to_dict(address)
    except Exception as err:        # psycopg.ProgrammingError: an unparsable string
        raise StoreRefused(f'{dburl.redact(address)}: not a PostgreSQL address '
                           f'({dburl.redact(str(err).splitlines()[0])})') from None
    settings = (f'-c statement_timeout={STATEMENT_TIMEOUT} -c lock_timeout={LOCK_TIMEOUT} '
                f'-c idle_in_transaction_session_timeout={IDLE_TIMEOUT}')
    extra = {'application_name': f'commcheck {purpose}',
             'options': f'{given.get("options", "")} {settings}'.strip()}
    if 'connect_timeout' not in given:
        extra['connect_timeout'] = CONNECT_TIMEOUT
    return extra


def connect(address: str, purpose: str = 'push'):
    """An autocommit psycopg connection to the store, its timeouts and application name set.
    Raises :class:`StoreUnavailable` or :class:`StoreRefused`."""
    import psycopg
    extra = _parameters(address, purpose)
    try:
        return psycopg.connect(address, autocommit=True, **extra)
    except psycopg.Error as err:
        raise failure(err, address) from None


#: SQLSTATE classes and codes (and, for errors raised while connecting, which carry none,
#: libpq's words) that a retry cannot mend.
REFUSED_STATES = ('28', '3D', '42501', '42P01', '0A')
REFUSED_WORDS = ('authentication failed', 'no password supplied', 'does not exist',
                 'no pg_hba.conf entry', 'permission denied', 'password is required',
                 'certificate', 'invalid', 'server does not support')


def failure(err: Exception, address: str) -> Exception:
    """The one-line :class:`StoreRefused` or :class:`StoreUnavailable` for a client error."""
    said = ' '.join(str(err).split()) or type(err).__name__
    state = getattr(err, 'sqlstate', None) or ''
    refused = state.startswith(REFUSED_STATES) or (
        not state and any(w in said.lower() for w in REFUSED_WORDS))
    where = dburl.redact(address)
    if refused:
        return StoreRefused(f'history store {where} refused: {dburl.redact(said)}')
    return StoreUnavailable(f'{where}: {dburl.redact(said)}')


# -- the schema -----------------------------------------------------------------------------
def schema_version(conn) -> int | None:
    """The store's schema version; None where it has no commcheck schema yet."""
    if conn.execute('SELECT to_regclass(%s)', (f'{SCHEMA}.meta',)).fetchone()[0] is None:
        return None
    row = conn.execute(f"SELECT value FROM {SCHEMA}.meta WHERE name = 'schema_version'"
                       ).fetchone()
    return int(row[0]) if row else None


def _newer(found: int, address: str) -> StoreRefused:
    return StoreRefused(f'history store {dburl.redact(address)} has schema version {found}, '
                        f'newer than this commcheck\'s {SCHEMA_VERSION}: upgrade commcheck '
                        f'(every client of a store runs the same or a newer commcheck)')


def ensure_schema(conn, address: str, create: bool = True) -> int:
    """The store at :data:`SCHEMA_VERSION`, created or migrated under an advisory lock when
    ``create`` (else refused: readers never change a store); a newer one is refused. Returns
    the version found before. Needs the owner's privileges only when it creates or migrates."""
    import psycopg
    found = schema_version(conn)
    if found == SCHEMA_VERSION:
        return found
    if found is not None and found > SCHEMA_VERSION:
        raise _newer(found, address)
    if not create:
        raise StoreRefused(f'history store {dburl.redact(address)} has '
                           + ('no commcheck schema' if found is None else
                              f'schema version {found}, older than {SCHEMA_VERSION}')
                           + ': run `commcheck push --init` once as its owner role')
    try:
        with conn.transaction():
            conn.execute('SELECT pg_advisory_xact_lock(%s)', (SCHEMA_LOCK,))
            found = schema_version(conn)        # another client may have done it meanwhile
            if found is not None and found >= SCHEMA_VERSION:
                if found > SCHEMA_VERSION:
                    raise _newer(found, address)
                return found
            for step in MIGRATIONS[found or 0:]:
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"INSERT INTO {SCHEMA}.meta VALUES ('schema_version', %s) "
                         f"ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                         (str(SCHEMA_VERSION),))
    except psycopg.errors.InsufficientPrivilege as err:
        raise StoreRefused(f'history store {dburl.redact(address)}: '
                           + ('no commcheck schema' if found is None else
                              f'schema version {found}, older than {SCHEMA_VERSION}')
                           + f', and this role may not create it ({err.diag.message_primary}): '
                             f'run `commcheck push --init` once as the owner role') from None
    except psycopg.Error as err:
        raise failure(err, address) from None
    return found or 0
