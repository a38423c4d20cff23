"""The shared history store's schema on a real PostgreSQL server (tests/pgserver.py)."""

from __future__ import annotations

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
