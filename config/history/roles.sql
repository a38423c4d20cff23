-- The shared history store's roles (docs/shared-history.md). Run once, as a superuser (or a
-- role with CREATEROLE that owns the database), connected to the store's database:
--     psql -v ON_ERROR_STOP=1 -d commcheck -f config/history/roles.sql
-- Then give each login role its password with psql's \password (never in a file or a command
-- line), and the store its tables: COMMCHECK_HISTORY=postgresql://commcheck_owner@HOST/commcheck
-- commcheck push --init.
--
--   commcheck_owner   owns the schema and its tables: creates and migrates them (push --init),
--                     archives and deletes sessions (commcheck archive).
--   commcheck_writer  what `commcheck push` and `commcheck run` use: SELECT and INSERT only; it
--                     can neither delete nor change a stored session.
--   commcheck_reader  dashboards and the readers (compare, history, report): SELECT only.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'commcheck_owner') THEN
        CREATE ROLE commcheck_owner LOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'commcheck_writer') THEN
        CREATE ROLE commcheck_writer LOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'commcheck_reader') THEN
        CREATE ROLE commcheck_reader LOGIN;
    END IF;
END
$$;

-- Nobody else creates objects in this database. The owner role gets no right on the database
-- beyond CONNECT (no CREATE: it cannot make other schemas): the schema is made here, owned by
-- it, and `push --init` only creates and migrates tables inside it.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
DO $$
BEGIN
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO commcheck_owner, commcheck_writer, '
                   'commcheck_reader', current_database());
END
$$;
CREATE SCHEMA IF NOT EXISTS commcheck AUTHORIZATION commcheck_owner;
GRANT USAGE ON SCHEMA commcheck TO commcheck_writer, commcheck_reader;

-- Tables the owner creates now and later (migrations) get these grants by themselves.
ALTER DEFAULT PRIVILEGES FOR ROLE commcheck_owner IN SCHEMA commcheck
    GRANT SELECT, INSERT ON TABLES TO commcheck_writer;
ALTER DEFAULT PRIVILEGES FOR ROLE commcheck_owner IN SCHEMA commcheck
    GRANT USAGE ON SEQUENCES TO commcheck_writer;
ALTER DEFAULT PRIVILEGES FOR ROLE commcheck_owner IN SCHEMA commcheck
    GRANT SELECT ON TABLES TO commcheck_reader;
-- Tables that already exist (the roles set up after the first push).
GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA commcheck TO commcheck_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA commcheck TO commcheck_writer;
GRANT SELECT ON ALL TABLES IN SCHEMA commcheck TO commcheck_reader;
