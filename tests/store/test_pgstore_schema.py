"""The shared history store's schema on a real PostgreSQL server (tests/pgserver.py)."""

from __future__ import annotations

import re

import pytest

from commcheck.results import pgstore


def test_the_owner_creates_the_schema_at_its_version(pg_store):
    server, db = pg_store
    url = server.url('commcheck_owner', db)
    with server.connect('commcheck_owner', db) as conn:
        assert pgstore.schema_version(conn) is None
        assert pgstore.ensure_schema(conn, url) == 0
        assert pgstore.schema_version(conn) == pgstore.SCHEMA_VERSION
        assert pgstore.ensure_schema(conn, url) == pgstore.SCHEMA_VERSION
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'commcheck'")}
    assert tables == {'meta', 'sessions', 'measurements', 'provenances'}


def test_the_owner_needs_no_right_on_the_database(pg_store):
    """The store as docs/shared-history.md sets it up (createdb as postgres, roles.sql): the
    owner role owns its schema and nothing more, and that is enough to create the tables."""
    server, db = pg_store
    with server.connect('commcheck_owner', db) as conn:
        assert conn.execute("SELECT has_database_privilege(current_database(), 'CREATE'), "
                            "pg_get_userbyid(datdba) FROM pg_database "
                            "WHERE datname = current_database()").fetchone() == (False, 'postgres')
        assert pgstore.ensure_schema(conn, server.url('commcheck_owner', db)) == 0


def _refused(server, db: str, role: str) -> str:
    with server.connect(role, db) as conn:
        with pytest.raises(pgstore.StoreRefused) as refused:
            pgstore.ensure_schema(conn, server.url(role, db))
    return str(refused.value)


@pytest.mark.parametrize('broken, lacks', [
    ('DROP SCHEMA commcheck', 'no CREATE right on database'),
    ('ALTER SCHEMA commcheck OWNER TO postgres', 'no USAGE or CREATE right on schema commcheck')])
def test_a_missing_right_is_named_with_the_grant_that_mends_it(pg_store, broken, lacks):
    """The schema gone (the database's right is needed) or a superuser's (the schema's is):
    one line naming the right, and the GRANT it names, run as it is, mends it."""
    server, db = pg_store
    with server.connect(db=db) as admin:
        admin.execute(broken)
    said = _refused(server, db, 'commcheck_owner')
    assert lacks in said and '\n' not in said, said
    assert 'push --init' not in said and 'no commcheck schema' not in said
    grant = re.search(r'GRANT (USAGE, )?CREATE ON (DATABASE|SCHEMA) \w+ TO commcheck_owner$',
                      said)
    assert grant, said
    with server.connect(db=db) as admin:
        admin.execute(grant.group())
    with server.connect('commcheck_owner', db) as conn:
        assert pgstore.ensure_schema(conn, server.url('commcheck_owner', db)) == 0


def test_a_writer_is_sent_to_the_owner_role_not_told_there_is_no_schema(pg_store):
    server, db = pg_store
    said = _refused(server, db, 'commcheck_writer')
    assert 'has schema commcheck but no tables yet, and role commcheck_writer' in said, said
    assert 'no CREATE right on schema commcheck, owned by commcheck_owner' in said
    assert said.endswith('run `commcheck push --init` as commcheck_owner, the store\'s owner '
                         'role')


def test_every_connection_sets_its_timeouts_and_name(pg_store, monkeypatch):
    server, db = pg_store
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    with pgstore.connect(server.url('commcheck_reader', db), 'compare') as conn:
        said = conn.execute("SELECT current_setting('statement_timeout'), "
                            "current_setting('lock_timeout'), "
                            "current_setting('idle_in_transaction_session_timeout'), "
                            "current_setting('application_name')").fetchone()
        assert conn.info.get_parameters()['connect_timeout'] == str(pgstore.CONNECT_TIMEOUT)
    assert said == ('2min', '30s', '5min', 'commcheck compare')
    given = server.url('commcheck_reader', db) + \
        '&connect_timeout=3&options=-c%20statement_timeout%3D7s'
    with pgstore.connect(given) as conn:
        assert conn.info.get_parameters()['connect_timeout'] == '3'
        assert conn.execute('SHOW statement_timeout').fetchone()[0] == '7s'
        assert conn.execute('SHOW lock_timeout').fetchone()[0] == '30s'


def test_a_store_that_cannot_be_reached_or_refuses_is_told_apart(pg_store, monkeypatch):
    server, db = pg_store
    monkeypatch.setenv('PGPASSFILE', str(server.passfile))
    gone = server.url('commcheck_reader', db).replace(str(server.socket), '/nonexistent')
    with pytest.raises(pgstore.StoreUnavailable):
        pgstore.connect(gone)
    with pytest.raises(pgstore.StoreRefused, match='does not exist'):
        pgstore.connect(server.url('commcheck_reader', 'no_such_db'))
    with pytest.raises(pgstore.StoreRefused, match='refused'):
        pgstore.connect(server.url('nobody', db))
