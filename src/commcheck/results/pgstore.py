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

import dataclasses
import gzip
import hashlib
import json
import math
import os
import time
import uuid as uuidlib
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from commcheck import dburl, paths
from commcheck.errors import UserError
from commcheck.results.sample_index import numbered
from commcheck.results.store import HistoryError, ResultsDB, Session, decode_record, warn_stderr

SCHEMA_VERSION = 1              #: bumped with every migration step added to MIGRATIONS
SCHEMA = 'commcheck'            #: the PostgreSQL schema (namespace) of every table
#: pg_advisory_xact_lock key taken while the schema is created or migrated
SCHEMA_LOCK = int.from_bytes(hashlib.sha256(b'commcheck.schema').digest()[:8], 'big') >> 1
CONNECT_TIMEOUT = 10            #: seconds for libpq to connect (unless the address sets one)
STATEMENT_TIMEOUT = '120s'      #: longest statement (the COPY of one session's measurements)
LOCK_TIMEOUT = '30s'            #: longest wait for a lock (a schema migration, a twin push)
IDLE_TIMEOUT = '300s'           #: a client that stalls inside a transaction is cut off
#: Test hook: seconds a push sleeps after its inserts, before COMMIT (the kill test uses it).
PAUSE_ENV = 'COMMCHECK_TEST_PUSH_PAUSE'
ROLES_SQL = paths.CONFIG_DIR / 'history' / 'roles.sql'

MEASUREMENT_COLUMNS = ('session', 'launch', 'time_unix', 'cluster', 'partition', 'environ',
                       'test', 'variable', 'value', 'unit', 'result', 'oversubscribed',
                       'provenance')

#: MIGRATIONS[v] takes a store from version v to v + 1 (0: no tables yet). The schema itself
#: is config/history/roles.sql's (made by a superuser, owned by the owner role); created
#: here only where it is missing (:func:`_create_schema`).
MIGRATIONS: tuple[tuple[str, ...], ...] = ((
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
    the spool and a later push lands them. The message is one line, the address redacted;
    ``waiting`` (set by :func:`push`): spool -> how many of its sessions the store lacks."""

    def __init__(self, message: str, waiting: dict[Path, int] | None = None):
        super().__init__(message)
        self.reason, self.waiting = message, dict(waiting or {})

    def line(self) -> str:
        """``history store unavailable: <reason>; N sessions wait in <spool>``."""
        waits = '; '.join(f'{n} session{"s" if n != 1 else ""} wait{"s" if n == 1 else ""} '
                          f'in {path}' for path, n in self.waiting.items())
        return f'history store unavailable: {self.reason}' + (f'; {waits}' if waits else '')


class StoreRefused(UserError):
    """The store refuses us in a way a retry cannot mend (authentication, a newer schema,
    privileges, a missing database): one line saying what to fix."""


# -- where the store is ---------------------------------------------------------------------
def store_address(explicit: str | None = None,
                  site_history: str | Callable[[], str | None] | None = None) -> str | None:
    """The store's address, resolved once for ``push``, ``run`` and the readers alike: the
    option (``--db``), else the environment (``COMMCHECK_HISTORY``), else the site file's
    ``history:``; None when none is set. ``site_history``: that ``history:`` or what reads
    it, read only when the first two are unset (default: the site file ``COMMCHECK_SITE``
    names, :func:`site_file_history`). An address with a password is refused
    (:class:`StoreRefused`, the password not printed)."""
    def site() -> str | None:
        found = site_file_history if site_history is None else site_history
        return found() if callable(found) else found
    for value, where in ((lambda: explicit, '--db'), (dburl.from_environment, dburl.ENV),
                         (site, 'history: of the site file')):
        value = value()
        if value and value.strip():
            problem = dburl.password_problem(value.strip(), where)
            if problem:
                raise StoreRefused(problem)
            return value.strip()
    return None


def site_file_history() -> str | None:
    """The ``history:`` of the site file ``COMMCHECK_SITE`` names (the local site, discovered,
    has none: nothing is discovered to answer this)."""
    name = os.environ.get('COMMCHECK_SITE', '').strip()
    if not name or name == 'local':
        return None
    from commcheck.site import SiteError, sitefile
    try:
        return sitefile.load_named(name).history
    except SiteError as err:
        raise SiteError(f'COMMCHECK_SITE={name}: {err}') from None


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
    extra = {'application_name': f'commcheck {purpose}',     # the address's own -c win
             'options': f'{settings} {given.get("options", "")}'.strip()}
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
    """The store's schema version; None where it has no commcheck schema yet. The catalog is
    read by a query (its snapshot sees a table another client committed meanwhile; a
    name lookup such as ``to_regclass`` may answer from this session's stale catalog cache)."""
    if conn.execute('SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n '
                    "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = 'meta'",
                    (SCHEMA,)).fetchone()[0] == 0:
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
    the version found before. Needs the right to create tables in the schema only when it
    creates or migrates them, and the database's CREATE right only where the schema is missing
    (roles.sql makes it, owned by the owner role: ``CREATE SCHEMA IF NOT EXISTS`` would need
    that right even then)."""
    import psycopg
    found = schema_version(conn)
    if found == SCHEMA_VERSION:
        return found
    if found is not None and found > SCHEMA_VERSION:
        raise _newer(found, address)
    if not create:
        lacks = _lacks(conn, found)
        first = ('as a superuser run config/history/roles.sql, then ' if
                 lacks == f'no schema {SCHEMA}' else '')
        raise StoreRefused(f'history store {dburl.redact(address)} has {lacks}: {first}'
                           f'run `commcheck push --init` once as its owner role')
    try:
        with conn.transaction():
            conn.execute('SELECT pg_advisory_xact_lock(%s)', (SCHEMA_LOCK,))
            found = schema_version(conn)        # another client may have done it meanwhile
            if found is not None and found >= SCHEMA_VERSION:
                if found > SCHEMA_VERSION:
                    raise _newer(found, address)
                return found
            _may_create(conn, found, address)
            _create_schema(conn)
            for step in MIGRATIONS[found or 0:]:
                for statement in step:
                    conn.execute(statement)
            conn.execute(f"INSERT INTO {SCHEMA}.meta VALUES ('schema_version', %s) "
                         f"ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value",
                         (str(SCHEMA_VERSION),))
    except psycopg.Error as err:
        raise failure(err, address) from None
    return found or 0


def _lacks(conn, found: int | None) -> str:
    """What the store lacks: its schema, its tables, or a newer version of them."""
    if found is not None:
        return f'schema version {found}, older than {SCHEMA_VERSION}'
    there = conn.execute('SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = %s',
                         (SCHEMA,)).fetchone()[0]
    return f'schema {SCHEMA} but no tables yet' if there else f'no schema {SCHEMA}'


@dataclasses.dataclass(frozen=True)
class _Rights:
    """What this connection's role may create where the store's tables go."""
    role: str
    database: str
    on_database: bool           # CREATE on the database (a new schema)
    schema_owner: str | None    # None: no schema yet
    usage: bool                 # USAGE on the schema (to reach its tables)
    on_schema: bool             # CREATE on the schema (new tables)
    store_owner: str | None     # the role whose new tables writer and reader get (roles.sql)


def _rights(conn) -> _Rights:
    row = conn.execute(
        'SELECT current_user, current_database(), '
        "has_database_privilege(current_database(), 'CREATE'), "
        'pg_get_userbyid(n.nspowner), '
        "n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'USAGE'), "
        "n.oid IS NOT NULL AND has_schema_privilege(n.oid, 'CREATE'), "
        '(SELECT pg_get_userbyid(d.defaclrole) FROM pg_catalog.pg_default_acl d '
        ' WHERE d.defaclnamespace = n.oid ORDER BY d.defaclrole LIMIT 1) '
        'FROM (SELECT 1) AS one LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = %s',
        (SCHEMA,)).fetchone()
    return _Rights(*row)


def _may_create(conn, found: int | None, address: str) -> None:
    """Refuses (:class:`StoreRefused`) a role that may not create what is missing, naming the
    right it lacks, on what, and the one statement (or role) that mends it."""
    rights = _rights(conn)
    where, role = dburl.redact(address), rights.role
    if rights.schema_owner is None and not rights.on_database:
        raise StoreRefused(
            f'history store {where}: no schema {SCHEMA} in database {rights.database}, and role '
            f'{role} may not create it (no CREATE right on database {rights.database}): as a '
            f'superuser run config/history/roles.sql in it (it makes the schema for '
            f'commcheck_owner), or GRANT CREATE ON DATABASE {rights.database} TO {role}')
    lacking = [name for name, held in (('USAGE', rights.usage), ('CREATE', rights.on_schema))
               if not held]
    if rights.schema_owner is None or not lacking:
        return
    owner = rights.store_owner or rights.schema_owner
    mend = (f'as a superuser, GRANT {", ".join(lacking)} ON SCHEMA {SCHEMA} TO {role}'
            if owner == role else
            f'run `commcheck push --init` as {owner}, the store\'s owner role')
    raise StoreRefused(
        f'history store {where} has {_lacks(conn, found)}, and role {role} may not create '
        f'them (no {" or ".join(lacking)} right on schema {SCHEMA}, owned by '
        f'{rights.schema_owner}): {mend}')


def _create_schema(conn) -> None:
    """The schema, where it is missing (owned by this role)."""
    if conn.execute('SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = %s',
                    (SCHEMA,)).fetchone()[0] == 0:
        conn.execute(f'CREATE SCHEMA {SCHEMA}')


# -- the spool: where sessions wait ---------------------------------------------------------
SQLITE_MAGIC = b'SQLite format 3\x00'
DATABASE, RUN_REPORT = 'results database', 'run report'


@dataclasses.dataclass
class Waiting:
    """A session in a spool, its record not yet read."""
    uuid: str
    start: float                # ReFrame's time_start_unix (0.0 if unknown)


class Spool:
    """Where sessions wait for the store: ReFrame's results database (``reports/results.db``,
    every session of it) or one ReFrame run report (``--report-file``: one session).
    Opening validates it: a file that is neither raises :class:`HistoryError` naming it.
    ``db``: that results database, when the caller has it open already."""

    def __init__(self, path: str | Path, db: ResultsDB | None = None):
        self.path = Path(path)
        try:
            with open(self.path, 'rb') as f:
                head = f.read(len(SQLITE_MAGIC))
        except OSError as err:
            raise HistoryError(f'{self.path}: cannot read ({err.strerror or err})') from None
        self.kind = DATABASE if head == SQLITE_MAGIC else RUN_REPORT
        if self.kind == DATABASE:
            self.db = db if db is not None else ResultsDB(self.path)
            self.sessions = [Waiting(s.uuid, s.time_start) for s in self.db.stored()]
        else:
            self.text = self._report_text()
            self.sessions = [self._report_session()]
        for waiting in self.sessions:
            _check_uuid(waiting.uuid, self.path)

    def _report_text(self) -> str:
        try:
            raw = self.path.read_bytes()
            return (gzip.decompress(raw) if raw[:2] == b'\x1f\x8b' else raw).decode('utf-8')
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as err:
            raise HistoryError(f'{self.path}: not a ReFrame run report or results database '
                               f'({err})') from None

    def _report_session(self) -> Waiting:
        try:
            info = json.loads(self.text).get('session_info')
        except (ValueError, AttributeError) as err:
            raise HistoryError(f'{self.path}: not a ReFrame run report or results database '
                               f'({err or "not a JSON object"})') from None
        if not isinstance(info, dict) or 'uuid' not in info:
            raise HistoryError(f'{self.path}: not a ReFrame run report (no session_info.uuid)')
        start = info.get('time_start_unix')
        return Waiting(str(info['uuid']), float(start) if _finite(start) else 0.0)

    def records(self, uuids: list[str]) -> Iterator[tuple[str, str]]:
        """(uuid, the record's text exactly as stored) of the given sessions."""
        if self.kind == DATABASE:
            yield from self.db.records(uuids)
        elif self.sessions[0].uuid in uuids:
            yield self.sessions[0].uuid, self.text


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


def _check_uuid(text: str, path: Path) -> None:
    try:
        uuidlib.UUID(text)
    except ValueError:
        raise HistoryError(f'{path}: session {text!r} has no valid uuid; not pushed') from None


class Ledger:
    """The sessions of a spool known to be in a store: ``<spool>.pushed``, one line
    ``<store> <uuid>`` per session (appended, never rewritten), so a push that cannot reach
    the store still says how many wait. Only a count: the store is asked what it holds."""

    def __init__(self, spool: Path, address: str):
        self.path = spool.with_name(spool.name + '.pushed')
        self.store = hashlib.sha256(dburl.redact(address).encode()).hexdigest()[:16]

    def known(self) -> set[str]:
        try:
            lines = self.path.read_text(encoding='utf-8', errors='replace').splitlines()
        except OSError:
            return set()
        return {u for s, _, u in (line.partition(' ') for line in lines) if s == self.store}

    def add(self, uuids: list[str]) -> None:
        """Appended in one write (lines shorter than PIPE_BUF: concurrent pushes never
        interleave them); a spool whose folder is read-only keeps no ledger."""
        if not uuids:
            return
        try:
            with open(self.path, 'a', encoding='utf-8') as f:
                f.write(''.join(f'{self.store} {u}\n' for u in uuids))
        except OSError:
            pass


# -- pushing --------------------------------------------------------------------------------
def _digest(provenance: tuple) -> tuple[str, str]:
    """(sha256, canonical JSON) of a provenance (its sorted (field, value) pairs)."""
    text = json.dumps(dict(provenance), sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode()).hexdigest(), text


def cluster_of(session: Session | None) -> str:
    """The ReFrame system a session ran on (its test cases' most common one)."""
    systems = Counter(str(c.get('system') or '') for c in session.cases
                      if not c.get('fixture')) if session else Counter()
    systems.pop('', None)
    return systems.most_common(1)[0][0] if systems else ''


def _pause() -> None:
    """Test hook (:data:`PAUSE_ENV`): sleep inside the transaction, after the inserts."""
    seconds = os.environ.get(PAUSE_ENV, '').strip()
    if seconds:
        time.sleep(float(seconds))


class Pusher:
    """Sessions into one store through one connection; each session one transaction."""

    def __init__(self, conn, address: str, site: str, warn: Callable[[str], None]):
        self.conn, self.address, self.site, self.warn = conn, address, site, warn
        self._ids: dict[str, int] = {}          # provenance digest -> id (committed rows)

    def held(self, uuids: list[str]) -> set[str]:
        """Which of these sessions the store holds."""
        rows = self.conn.execute(f'SELECT uuid::text FROM {SCHEMA}.sessions '
                                 f'WHERE uuid = ANY(%s::uuid[])', (uuids,)).fetchall()
        return {r[0] for r in rows}

    def provenance_ids(self, provenances: set[tuple]) -> dict[tuple, int]:
        """Each provenance's id, stored first where new (in digest order, committed at once:
        concurrent pushes of the same provenances wait for each other only briefly and
        never deadlock)."""
        items = sorted((*_digest(p), p) for p in provenances)
        new = [(d, t) for d, t, _ in items if d not in self._ids]
        if new:
            self.conn.execute(
                f'INSERT INTO {SCHEMA}.provenances (digest, provenance) SELECT d, p::jsonb '
                f'FROM unnest(%s::text[], %s::text[]) AS t(d, p) ORDER BY d '
                f'ON CONFLICT (digest) DO NOTHING', ([d for d, _ in new], [t for _, t in new]))
            self._ids.update(self.conn.execute(
                f'SELECT digest, id FROM {SCHEMA}.provenances WHERE digest = ANY(%s)',
                ([d for d, _ in new],)).fetchall())
        return {p: self._ids[d] for d, _, p in items}

    def push(self, waiting: Waiting, record: str, kind: str, where: str) -> int | None:
        """One session and its measurements in one transaction; the number of measurements,
        or None when the store already held it (nothing written)."""
        problems: list[str] = []
        session = decode_record(record, where, problems.append)
        rows = list(numbered(session.samples)) if session else []
        ids = self.provenance_ids({s.provenance for _, s in rows})
        with self.conn.transaction():
            if self._insert_session(waiting, session, record, kind, len(rows), problems):
                return None
            with self.conn.cursor().copy(f'COPY {SCHEMA}.measurements '
                                         f'({", ".join(MEASUREMENT_COLUMNS)}) FROM STDIN') as cp:
                for launch, s in rows:
                    cp.write_row((waiting.uuid, launch, s.time, s.system, s.partition,
                                  s.environ, s.test, s.variable, s.value, s.unit, s.result,
                                  s.oversubscribed, ids[s.provenance]))
            _pause()
        for problem in problems if session else ():
            self.warn(problem)
        return len(rows)

    def _insert_session(self, waiting: Waiting, session: Session | None, record: str,
                        kind: str, rows: int, problems: list[str]) -> bool:
        """The session's row; True when the store already held it (ON CONFLICT DO NOTHING:
        a concurrent push of the same session waits for the first to commit, then finds it)."""
        info = session.info if session else {}
        end = info.get('time_end_unix')
        found = self.conn.execute(
            f'INSERT INTO {SCHEMA}.sessions (uuid, site, cluster, host, start_unix, end_unix, '
            f'record, format, source, cases, measurements, problem) VALUES '
            f'(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) '
            f'ON CONFLICT (uuid) DO NOTHING RETURNING uuid',
            (waiting.uuid, self.site, cluster_of(session), str(info.get('hostname') or ''),
             session.time_start if session and session.time_start else waiting.start,
             float(end) if _finite(end) else None, record,
             str(info.get('data_version') or ''), kind, len(session.cases) if session else 0,
             rows, None if session else (problems[-1] if problems else 'unreadable'))
        ).fetchone()
        return found is None


@dataclasses.dataclass
class Outcome:
    pushed: list[str] = dataclasses.field(default_factory=list)
    already: list[str] = dataclasses.field(default_factory=list)


def waiting(spools: list[Spool], address: str) -> dict[Path, int]:
    """Spool -> how many of its sessions are not known (from its ledger) to be in the store."""
    out = {}
    for spool in spools:
        known = Ledger(spool.path, address).known()
        out[spool.path] = len({w.uuid for w in spool.sessions} - known)
    return {path: n for path, n in out.items() if n}


def push(address: str, spools: list[Spool], site: str, say: Callable[[str], None],
         warn: Callable[[str], None] = warn_stderr) -> Outcome:
    """Every session of the spools that the store lacks, each in one transaction; a line
    said per session pushed (and per spool for those already there). Raises
    :class:`StoreUnavailable` (with what still waits) or :class:`StoreRefused`."""
    import psycopg
    outcome = Outcome()
    try:
        with connect(address) as conn:
            ensure_schema(conn, address)
            pusher = Pusher(conn, address, site, warn)
            for spool in spools:
                _push_spool(pusher, spool, Ledger(spool.path, address), outcome, say)
    except psycopg.Error as err:
        found = failure(err, address)
        if not isinstance(found, StoreUnavailable):
            raise found from None
        raise StoreUnavailable(found.reason, waiting(spools, address)) from None
    except StoreUnavailable as err:
        raise StoreUnavailable(err.reason, waiting(spools, address)) from None
    return outcome


def _push_spool(pusher: Pusher, spool: Spool, ledger: Ledger, outcome: Outcome,
                say: Callable[[str], None]) -> None:
    uuids = [w.uuid for w in spool.sessions]
    held = pusher.held(uuids) if uuids else set()
    ledger.add(sorted(held - ledger.known()))
    there = [u for u in uuids if u in held]
    if len(there) == 1:
        say(f'already in the store: {there[0]} ({spool.path})')
    elif there:
        say(f'already in the store: {len(there)} sessions of {spool.path}')
    outcome.already.extend(there)
    todo = {w.uuid: w for w in spool.sessions if w.uuid not in held}
    for uuid, record in spool.records(list(todo)):
        count = pusher.push(todo[uuid], record, spool.kind, f'{spool.path} session {uuid}')
        ledger.add([uuid])
        if count is None:
            say(f'already in the store: {uuid} ({spool.path}; pushed meanwhile by another)')
            outcome.already.append(uuid)
        else:
            say(f'pushed {uuid} ({count} measurements, from {spool.path})')
            outcome.pushed.append(uuid)
