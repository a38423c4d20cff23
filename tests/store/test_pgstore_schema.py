"""The shared history store's schema on a real PostgreSQL server (tests/pgserver.py)."""

from __future__ import annotations

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
