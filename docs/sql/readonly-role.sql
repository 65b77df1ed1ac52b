-- The SELECT-only role sleuth's sql_query tool connects as.
--
-- Run as the owner of the tables (or a superuser), in the database the tool reads, e.g.
--   psql "$OWNER_DSN" -v ON_ERROR_STOP=1 -f docs/sql/readonly-role.sql
-- then set a password (ALTER ROLE sleuth_reader PASSWORD '...') or use your usual auth, and
-- put the role's DSN in the Secret named by the ToolBinding's spec.sqlQuery.connectionSecretRef.
--
-- Grant SELECT on exactly the tables of the ToolBinding's allowedTables: the guard refuses
-- other tables, and this role makes the database refuse them too. The tests apply this file
-- to their own PostgreSQL (tests/tools/conftest.py), so it is known to run.

CREATE ROLE sleuth_reader
  LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS
  CONNECTION LIMIT 32;

-- Every session of the role is read-only and bounded, even outside the tool's own settings.
ALTER ROLE sleuth_reader SET default_transaction_read_only = on;
ALTER ROLE sleuth_reader SET statement_timeout = '10s';
ALTER ROLE sleuth_reader SET lock_timeout = '1s';
ALTER ROLE sleuth_reader SET idle_in_transaction_session_timeout = '30s';

-- No objects of its own: no CREATE in public (PostgreSQL 15+ already revokes it from PUBLIC),
-- no temporary tables.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
DO $$ BEGIN
  EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
END $$;

-- Read exactly the allowlisted tables.
GRANT USAGE ON SCHEMA public TO sleuth_reader;
GRANT SELECT ON TABLE public.contracts TO sleuth_reader;
-- GRANT SELECT ON TABLE public.another_allowlisted_table TO sleuth_reader;
