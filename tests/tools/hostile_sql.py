"""A corpus of hostile queries for the SQL guard; every one must be refused.

Each entry is ``(category, sql, params)``. The allowlist the tests use is ``contracts`` only;
``payroll``, ``api_credentials`` and ``providers`` exist in the test database and must stay out
of reach, as must every system catalog.
"""

from __future__ import annotations

Hostile = tuple[str, str, list[object]]

FORBIDDEN = ("payroll", "api_credentials", "providers")
CATALOGS = (
    "pg_authid",
    "pg_catalog.pg_authid",
    "pg_shadow",
    "pg_roles",
    "pg_user",
    "pg_settings",
    "pg_stat_activity",
    "pg_class",
    "pg_proc",
    "pg_catalog.pg_database",
    "information_schema.tables",
    "information_schema.columns",
    "information_schema.role_table_grants",
)

_DDL = [
    "CREATE TABLE evil (a int)",
    "CREATE TEMP TABLE evil AS SELECT * FROM contracts",
    "CREATE TABLE evil AS SELECT * FROM contracts",
    "CREATE INDEX ON contracts (amount)",
    "CREATE VIEW v AS SELECT * FROM payroll",
    "CREATE MATERIALIZED VIEW mv AS SELECT * FROM contracts",
    "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE ROLE evil SUPERUSER",
    "CREATE EXTENSION dblink",
    "CREATE SCHEMA evil",
    "CREATE SEQUENCE s",
    "CREATE TRIGGER t AFTER INSERT ON contracts EXECUTE FUNCTION f()",
    "DROP TABLE contracts",
    "DROP TABLE IF EXISTS contracts CASCADE",
    "DROP SCHEMA public CASCADE",
    "DROP DATABASE postgres",
    "DROP ROLE sleuth_reader",
    "ALTER TABLE contracts ADD COLUMN x int",
    "ALTER TABLE contracts RENAME TO c2",
    "ALTER ROLE sleuth_reader SUPERUSER",
    "ALTER SYSTEM SET fsync = off",
    "TRUNCATE contracts",
    "TRUNCATE TABLE contracts, payroll",
    "COMMENT ON TABLE contracts IS 'x'",
    "GRANT SELECT ON payroll TO sleuth_reader",
    "REVOKE SELECT ON contracts FROM sleuth_reader",
    "REINDEX TABLE contracts",
    "VACUUM contracts",
    "CLUSTER contracts",
    "ANALYZE contracts",
    "REFRESH MATERIALIZED VIEW mv",
    "SECURITY LABEL ON TABLE contracts IS 'x'",
]

_DML = [
    "INSERT INTO contracts (id) VALUES (9999)",
    "INSERT INTO contracts SELECT * FROM contracts",
    "INSERT INTO payroll VALUES ('mallory', 1) ON CONFLICT DO NOTHING",
    "UPDATE contracts SET amount = 0",
    "UPDATE contracts SET amount = 0 WHERE id = $1",
    "DELETE FROM contracts",
    "DELETE FROM contracts WHERE id IN (SELECT id FROM contracts)",
    "MERGE INTO contracts c USING contracts d ON c.id = d.id WHEN MATCHED THEN DELETE",
    "SELECT * INTO evil FROM contracts",
    "SELECT * INTO TEMP evil FROM contracts",
    "SELECT id INTO UNLOGGED evil FROM contracts",
    "UPDATE contracts SET amount = amount RETURNING *",
]

_MULTI = [
    "SELECT 1; DROP TABLE contracts",
    "SELECT 1;DROP TABLE contracts;",
    "SELECT * FROM contracts; DELETE FROM contracts",
    "SELECT 1; SELECT 2",
    "SELECT 1;\nUPDATE contracts SET amount = 0",
    "SELECT 1 ; ; DELETE FROM contracts",
    "DELETE FROM contracts; SELECT 1",
    "SELECT 1; COMMIT; DROP TABLE contracts",
]

_COMMENTS = [
    "SELECT 1 --\n; DELETE FROM contracts",
    "/* harmless */ DELETE FROM contracts",
    "SELECT/**/1;/**/DROP/**/TABLE/**/contracts",
    "SELECT 1 /* ; */ ; DROP TABLE contracts",
    "-- SELECT 1\nDELETE FROM contracts",
    "SELECT 1 /* /* nested */ */ ; DELETE FROM contracts",
    "SELECT 1 /* unterminated ; DROP TABLE contracts",
    "SELECT * FROM contracts /* */ UNION SELECT * FROM payroll",
    "SELECT (SELECT secret FROM api_credentials /* looks like a comment */ LIMIT 1)",
]

_CTE_DML = [
    "WITH d AS (DELETE FROM contracts RETURNING *) SELECT * FROM d",
    "WITH u AS (UPDATE contracts SET amount = 0 RETURNING id) SELECT count(*) FROM u",
    "WITH i AS (INSERT INTO contracts (id) VALUES (1) RETURNING id) SELECT * FROM i",
    "WITH a AS (SELECT 1), d AS (DELETE FROM contracts RETURNING 1) SELECT * FROM a",
    "SELECT * FROM (WITH d AS (DELETE FROM contracts RETURNING *) SELECT * FROM d) s",
    "WITH RECURSIVE d AS (DELETE FROM payroll RETURNING *) SELECT 1",
    "WITH x AS (SELECT * FROM contracts FOR UPDATE) SELECT * FROM x",
    "WITH m AS (MERGE INTO contracts c USING contracts d ON c.id = d.id "
    "WHEN MATCHED THEN DELETE RETURNING c.id) SELECT * FROM m",
]

_COPY = [
    "COPY contracts TO '/tmp/contracts.csv'",
    "COPY (SELECT * FROM contracts) TO PROGRAM 'sh -c id'",
    "COPY contracts FROM '/etc/passwd'",
    "COPY contracts FROM STDIN",
    "COPY contracts TO STDOUT",
]

_SESSION = [
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "RESET ROLE",
    "SET statement_timeout = 0",
    "SET LOCAL statement_timeout = 0",
    "SET search_path = evil, public",
    "SET default_transaction_read_only = off",
    "SET TRANSACTION READ WRITE",
    "SHOW ALL",
    "DISCARD ALL",
    "LISTEN evil",
    "NOTIFY evil, 'x'",
    "PREPARE p AS DELETE FROM contracts",
    "EXECUTE p",
    "DEALLOCATE ALL",
    "BEGIN",
    "BEGIN READ WRITE",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT s",
    "LOCK TABLE contracts IN ACCESS EXCLUSIVE MODE",
    "DO $$ BEGIN DELETE FROM contracts; END $$",
    "DO 'BEGIN DELETE FROM contracts; END'",
    "CALL evil()",
    "EXPLAIN ANALYZE DELETE FROM contracts",
    "EXPLAIN SELECT * FROM contracts",
    "LOAD '/tmp/evil.so'",
    "CHECKPOINT",
    "DECLARE c CURSOR FOR SELECT * FROM contracts",
    "FETCH ALL FROM c",
    "VALUES (1), (2)",
    "IMPORT FOREIGN SCHEMA public FROM SERVER s INTO public",
]

_FUNCTIONS = [
    "SELECT pg_sleep(10)",
    "SELECT pg_sleep_for('10 seconds')",
    "SELECT PG_SLEEP(10)",
    'SELECT "pg_sleep"(10)',
    "SELECT pg_catalog.pg_sleep(10)",
    "SELECT * FROM contracts WHERE pg_sleep(1) IS NULL",
    "SELECT * FROM contracts ORDER BY pg_sleep(1)",
    "SELECT provider FROM contracts GROUP BY provider HAVING pg_sleep(1) IS NULL",
    "WITH s AS (SELECT pg_sleep(10)) SELECT * FROM s",
    "SELECT * FROM contracts c JOIN LATERAL (SELECT pg_sleep(1)) s ON true",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_read_binary_file('/etc/passwd')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT pg_stat_file('postgresql.conf')",
    "SELECT lo_import('/etc/passwd')",
    "SELECT lo_export(1, '/tmp/x')",
    "SELECT lo_create(0)",
    "SELECT lo_unlink(1)",
    "SELECT dblink('dbname=postgres', 'DELETE FROM contracts')",
    "SELECT dblink_exec('dbname=postgres', 'DROP TABLE contracts')",
    "SELECT * FROM dblink('dbname=postgres', 'SELECT * FROM payroll') AS t(a text, b numeric)",
    "SELECT set_config('statement_timeout', '0', false)",
    "SELECT set_config('role', 'postgres', true)",
    "SELECT current_setting('data_directory')",
    "SELECT pg_terminate_backend(1)",
    "SELECT pg_cancel_backend(1)",
    "SELECT pg_reload_conf()",
    "SELECT pg_rotate_logfile()",
    "SELECT pg_advisory_lock(1)",
    "SELECT nextval('contracts_id_seq')",
    "SELECT setval('contracts_id_seq', 1)",
    "SELECT query_to_xml('SELECT * FROM payroll', true, true, '')",
    "SELECT ts_stat('SELECT * FROM payroll')",
    "SELECT txid_current()",
    "SELECT pg_notify('c', 'x')",
    "SELECT pg_logical_emit_message(true, 'x', 'y')",
    "SELECT pg_create_restore_point('x')",
    "SELECT public.evil()",
    "SELECT evil()",
    "SELECT * FROM contracts WHERE id = evil_function(1)",
    "SELECT version()",
    "SELECT database_to_xml(true, true, '')",
    "SELECT has_table_privilege('payroll', 'SELECT')",
    "SELECT inet_server_addr()",
]

_LOCKING = [
    "SELECT * FROM contracts FOR UPDATE",
    "SELECT * FROM contracts FOR NO KEY UPDATE",
    "SELECT * FROM contracts FOR SHARE",
    "SELECT * FROM contracts FOR KEY SHARE",
    "SELECT * FROM contracts FOR UPDATE NOWAIT",
    "SELECT * FROM contracts FOR UPDATE SKIP LOCKED",
    "SELECT * FROM (SELECT * FROM contracts FOR UPDATE) s",
]

_TRICKS = [
    'SELECT * FROM U&"\\0070ayroll"',
    "SELECT U&'\\0041'",
    'SELECT * FROM u&"\\0070ayroll"',
    "SELECT $$x$$",
    "SELECT $tag$ ; DROP TABLE contracts $tag$",
    "SELECT '\\' ; DROP TABLE contracts; --'",
    'SELECT * FROM "payroll"',
    "SELECT * FROM PAYROLL",
    "SELECT * FROM PayRoll",
    'SELECT * FROM "public"."payroll"',
    "SELECT * FROM postgres.public.contracts",
    "SELECT * FROM cоntracts",  # Cyrillic о
    'SELECT * FROM "contracts\u200b"',
    "SELECT 1\x00; DROP TABLE contracts",
    "SELECT * FROM contracts\uff1b DROP TABLE contracts",
    "TABLE payroll",
    "SELECT * FROM ONLY payroll",
    "SELECT * FROM payroll*",
    "SELECT * FROM payroll UNION (WITH payroll AS (SELECT 1) SELECT * FROM payroll)",
    "WITH a AS (SELECT * FROM payroll b), payroll AS (SELECT 1) SELECT * FROM a",
    "SELECT * FROM (SELECT 1) AS x, LATERAL pg_ls_dir('.')",
    "SELECT * FROM ROWS FROM (pg_ls_dir('.'))",
    "",
    "   ",
    ";",
    "-- only a comment",
    "SELECT " + "1 + " * 8000 + "1",
]

_PARAMS: list[Hostile] = [
    ("params", "SELECT * FROM contracts WHERE id = ?", [1]),
    ("params", "SELECT * FROM contracts WHERE id = %s", [1]),
    ("params", "SELECT * FROM contracts WHERE id = :id", [1]),
    ("params", "SELECT * FROM contracts WHERE id = $0", [1]),
    ("params", "SELECT * FROM contracts WHERE id = $1", []),
    ("params", "SELECT * FROM contracts WHERE id = $1", [1, 2]),
    ("params", "SELECT * FROM contracts WHERE id = $2", [1]),
    ("params", "SELECT * FROM contracts WHERE id = $2", [1, 2]),
    ("params", "SELECT * FROM contracts WHERE id = $1 AND year = $3", [1, 2, 3]),
    ("params", "SELECT * FROM contracts WHERE amount > $1 AND year = $2", [100000]),
    ("params", "SELECT * FROM contracts", [1]),
    ("params", "SELECT * FROM contracts WHERE id = $abc", [1]),
]


def _table_positions(table: str) -> list[str]:
    """``table`` reached from every place a query can read a relation."""
    return [
        f"SELECT * FROM {table}",
        f"SELECT * FROM contracts WHERE id IN (SELECT 1 FROM {table})",
        f"SELECT * FROM contracts WHERE EXISTS (SELECT 1 FROM {table})",
        f"SELECT (SELECT count(*) FROM {table}) AS n FROM contracts",
        f"SELECT * FROM contracts c JOIN {table} t ON true",
        f"SELECT * FROM contracts c, LATERAL (SELECT * FROM {table}) t",
        f"SELECT id::text FROM contracts UNION SELECT 'x' FROM {table}",
        f"SELECT 1 FROM contracts INTERSECT SELECT 1 FROM {table}",
        f"SELECT 1 FROM contracts EXCEPT SELECT 1 FROM {table}",
        f"WITH x AS (SELECT * FROM {table}) SELECT * FROM x",
        f"WITH a AS (SELECT 1), b AS (WITH c AS (SELECT * FROM {table}) SELECT * FROM c) "
        "SELECT * FROM b",
    ]


def corpus() -> list[Hostile]:
    entries: list[Hostile] = []
    for category, items in (
        ("ddl", _DDL),
        ("dml", _DML),
        ("multiple statements", _MULTI),
        ("comment tricks", _COMMENTS),
        ("cte carrying dml", _CTE_DML),
        ("copy", _COPY),
        ("session and utility", _SESSION),
        ("dangerous functions", _FUNCTIONS),
        ("locking", _LOCKING),
        ("quoting and unicode", _TRICKS),
    ):
        entries.extend((category, sql, []) for sql in items)
    for table in ("payroll", "api_credentials", "public.payroll"):
        entries.extend(("non-allowlisted table", sql, []) for sql in _table_positions(table))
    for table in ("pg_authid", "information_schema.tables"):
        entries.extend(("system catalog", sql, []) for sql in _table_positions(table))
    entries.extend(("system catalog", f"SELECT * FROM {t}", []) for t in CATALOGS)
    entries.extend(_PARAMS)
    unique: dict[tuple[str, str], Hostile] = {}
    for entry in entries:
        unique.setdefault((entry[1], repr(entry[2])), entry)
    return list(unique.values())
