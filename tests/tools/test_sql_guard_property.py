"""Property: anything the guard accepts runs read-only and reads only allowlisted tables.

Queries are built by hypothesis from fragments that mix legitimate and hostile pieces. Each one
the guard accepts is run **as the owner, outside any read-only transaction** (the guard alone
stands between it and the data), after ``EXPLAIN`` shows which relations it
reads. The checksums of every table, relation and role must not move. Random text must only
ever be accepted or refused, never crash the guard.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth.core.sql.guard import RULES, GuardPolicy, SqlRejected, check_sql

POLICY = GuardPolicy.of(["contracts"])

PREFIXES = [
    "",
    "WITH x AS (SELECT 1 AS one) ",
    "WITH x AS (SELECT * FROM payroll) ",
    "WITH x AS (DELETE FROM contracts RETURNING *) ",
    "WITH payroll AS (SELECT 1 AS one) ",
    "EXPLAIN ",
]
SELECT_ITEMS = [
    "*",
    "count(*)",
    "sum(amount)",
    "id",
    "provider",
    "now()",
    "pg_sleep(0)",
    "(SELECT count(*) FROM payroll)",
    "(SELECT count(*) FROM contracts)",
    "set_config('statement_timeout', '0', false)",
    "nextval('s')",
    "lower(provider)",
    "amount > $1",
]
FROM_ITEMS = [
    "contracts",
    "public.contracts",
    "CONTRACTS",
    '"contracts"',
    "payroll",
    "api_credentials",
    "pg_catalog.pg_roles",
    "information_schema.tables",
    "(SELECT * FROM contracts) s",
    "(SELECT * FROM api_credentials) s",
    "contracts c JOIN providers p ON true",
    "contracts c JOIN contracts d ON c.id = d.id",
    "generate_series(1, 3) g",
    "x",
    "payroll",
    "pg_ls_dir('.') f",
]
WHERES = ["", " WHERE amount > $1", " WHERE id IN (SELECT id FROM contracts)", " WHERE year = 2025"]
SUFFIXES = [
    "",
    " LIMIT 5",
    " FOR UPDATE",
    "; DELETE FROM contracts",
    " UNION ALL SELECT 1",
    " INTO TEMP t",
    " -- ; DROP TABLE contracts",
    " /* ; DROP TABLE contracts */",
]
queries = st.builds(
    lambda p, s, f, w, x: f"{p}SELECT {s} FROM {f}{w}{x}",
    st.sampled_from(PREFIXES),
    st.sampled_from(SELECT_ITEMS),
    st.sampled_from(FROM_ITEMS),
    st.sampled_from(WHERES),
    st.sampled_from(SUFFIXES),
)


class Db:
    """An owner connection driven from synchronous hypothesis tests."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn: asyncpg.Connection = self.loop.run_until_complete(asyncpg.connect(dsn))
        self.run(self.conn.execute("SET statement_timeout = '2s'"))

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def close(self) -> None:
        self.run(self.conn.close())
        self.loop.close()


@pytest.fixture(scope="module")
def db(postgres: Any) -> Iterator[Db]:
    db = Db(postgres.owner_dsn)
    try:
        yield db
    finally:
        db.close()


def _relations(plan: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(plan, dict):
        if "Relation Name" in plan:
            found.add(f"{plan.get('Schema', 'public')}.{plan['Relation Name']}")
        for value in plan.values():
            found |= _relations(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= _relations(value)
    return found


@pytest.mark.integration
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sql=queries)
def test_accepted_queries_run_read_only(db: Db, checksums: Any, sql: str) -> None:
    try:
        checked = check_sql(sql, POLICY)
    except SqlRejected:
        return
    before = db.run(checksums(db.conn))
    params = [100000] * checked.placeholders
    try:
        plan = db.run(db.conn.fetchval(f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}", *params))
    except asyncpg.PostgresError:
        plan = "[]"  # it does not plan (types, ambiguity): it cannot read anything either
    assert _relations(json.loads(plan)) <= {"public.contracts"}, sql
    # As the owner, with no read-only transaction: only the guard stands in the way. A query may
    # fail (types, timeout); it must still not write.
    with contextlib.suppress(asyncpg.PostgresError):
        db.run(db.conn.fetch(sql, *params))
    assert db.run(checksums(db.conn)) == before, sql


@pytest.mark.unit
@settings(max_examples=400, deadline=None)
@given(sql=st.text(max_size=200) | st.builds("{} {}".format, queries, st.text(max_size=40)))
def test_guard_only_accepts_or_refuses(sql: str) -> None:
    try:
        checked = check_sql(sql, POLICY)
    except SqlRejected as err:
        reason, rule = err.reason, err.rule
        assert reason
        assert rule in RULES
        return
    assert set(checked.tables) <= {"contracts", "public.contracts"}
