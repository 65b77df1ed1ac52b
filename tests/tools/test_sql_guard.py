"""The SQL guard: 150+ hostile queries refused before the database, legitimate ones accepted."""

from __future__ import annotations

from collections import Counter
from typing import Any

import asyncpg
import pytest

from sleuth.core.sql.guard import RULES, GuardPolicy, SqlRejected, check_sql
from sleuth.tools.base import ToolArgumentError
from sleuth.tools.sample.contracts import SEED_PARAMS, SEED_SQL
from sleuth.tools.sql.tool import SqlQueryTool, SqlToolConfig
from tests.tools.hostile_sql import corpus

POLICY = GuardPolicy.of(["contracts"])
HOSTILE = corpus()

LEGITIMATE: list[tuple[str, list[object]]] = [
    (SEED_SQL, list(SEED_PARAMS)),
    ("SELECT * FROM contracts", []),
    ("select count(*) from CONTRACTS", []),
    ('SELECT * FROM "contracts" WHERE id = $1', [1]),
    ("SELECT * FROM public.contracts LIMIT 5", []),
    ("SELECT provider, SUM(amount) AS total FROM contracts GROUP BY provider ORDER BY 2 DESC", []),
    (
        "WITH big AS (SELECT * FROM contracts WHERE amount > $1) "
        "SELECT provider_region, count(*) FROM big GROUP BY 1",
        [100000],
    ),
    (
        "WITH RECURSIVE n AS (SELECT 1 AS i UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT * FROM n",
        [],
    ),
    ("SELECT year FROM contracts UNION SELECT 2030", []),
    ("SELECT id FROM contracts WHERE id IN (SELECT id FROM contracts WHERE year = $1)", [2025]),
    ("SELECT c.id FROM contracts c JOIN contracts d ON c.id = d.id WHERE c.year = $1", [2024]),
    (
        "SELECT provider, amount, rank() OVER (PARTITION BY provider ORDER BY amount DESC) "
        "FROM contracts",
        [],
    ),
    (
        "SELECT date_trunc('month', signed_on) AS m, to_char(signed_on, 'YYYY-MM'), "
        "extract(year FROM signed_on), coalesce(status, 'none'), round(amount / 1000, 1) "
        "FROM contracts",
        [],
    ),
    ("SELECT CASE WHEN amount > $1 THEN 'big' ELSE 'small' END FROM contracts", [100000]),
    ("SELECT * FROM generate_series(1, 3) AS g", []),
    ("SELECT split_part(contract_ref, '-', 2), date_part('year', signed_on) FROM contracts", []),
    ("(SELECT 1)", []),
    ("SELECT 'DROP TABLE contracts; -- just text' AS s", []),
    ("SELECT * FROM contracts -- trailing comment", []),
    ("SELECT 1;", []),
]


@pytest.mark.unit
def test_corpus_is_large_and_covers_every_category() -> None:
    counts = Counter(category for category, _, _ in HOSTILE)
    assert len(HOSTILE) >= 150
    assert set(counts) == {
        "ddl",
        "dml",
        "multiple statements",
        "comment tricks",
        "cte carrying dml",
        "copy",
        "session and utility",
        "dangerous functions",
        "locking",
        "quoting and unicode",
        "non-allowlisted table",
        "system catalog",
        "params",
    }


@pytest.mark.unit
@pytest.mark.parametrize(("category", "sql", "params"), HOSTILE, ids=range(len(HOSTILE)))
def test_guard_refuses(category: str, sql: str, params: list[object]) -> None:
    with pytest.raises(SqlRejected) as info:
        check_sql(sql, POLICY, params)
    assert info.value.reason
    assert info.value.rule in RULES
    assert str(info.value).startswith(f"query refused ({info.value.rule}): ")


@pytest.mark.unit
@pytest.mark.parametrize(("sql", "params"), LEGITIMATE, ids=range(len(LEGITIMATE)))
def test_guard_accepts_legitimate(sql: str, params: list[object]) -> None:
    checked = check_sql(sql, POLICY, params)
    assert checked.placeholders == len(params)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("DELETE FROM contracts", "only SELECT is allowed, found DELETE"),
        ("SELECT 1; SELECT 2", "exactly one statement is allowed, found 2"),
        ("SELECT * FROM payroll", "table 'payroll' is not allowlisted (allowed: contracts)"),
        ("SELECT pg_sleep(1)", "function pg_sleep() is not allowed"),
        ("SELECT * FROM contracts FOR UPDATE", "locking clauses"),
        ("SELECT * FROM contracts WHERE id = $1", "1 placeholder(s) but 0 param(s)"),
        ("WITH d AS (DELETE FROM contracts RETURNING *) SELECT 1", "DELETE is not allowed"),
    ],
)
def test_refusal_reason_names_the_rule(sql: str, reason: str) -> None:
    with pytest.raises(SqlRejected, match=reason.replace("(", r"\(").replace(")", r"\)")):
        check_sql(sql, POLICY, [])


@pytest.mark.integration
async def test_hostile_corpus_never_reaches_database(
    postgres: Any, reader_pool: asyncpg.Pool, owner_conn: asyncpg.Connection, checksums: Any
) -> None:
    before = await checksums(owner_conn)
    # A closed pool: any query that got past the guard would fail with ToolUnavailable instead.
    closed = await asyncpg.create_pool(postgres.reader_dsn, min_size=0, max_size=1)
    assert closed is not None
    await closed.close()
    unreachable = SqlQueryTool(closed, SqlToolConfig(allowed_tables=("contracts",)))
    live = SqlQueryTool(reader_pool, SqlToolConfig(allowed_tables=("contracts",)))
    for _, sql, params in HOSTILE:
        for tool in (unreachable, live):
            with pytest.raises(ToolArgumentError, match=r"^query refused \(\w+\): "):
                await tool.call({"query": sql, "params": params})
    assert await checksums(owner_conn) == before


@pytest.mark.integration
async def test_legitimate_queries_run(
    reader_pool: asyncpg.Pool, owner_conn: asyncpg.Connection, checksums: Any
) -> None:
    before = await checksums(owner_conn)
    tool = SqlQueryTool(reader_pool, SqlToolConfig(allowed_tables=("contracts",)))
    for sql, params in LEGITIMATE:
        out = await tool.call({"query": sql, "params": params})
        assert out.content["row_count"] >= 1, sql
    assert await checksums(owner_conn) == before


@pytest.mark.unit
@pytest.mark.parametrize(
    "garbage", ["0?", "?", ")(", "SELECT (", "'", '"', "$", "\\", "SELECT 1 +"]
)
def test_garbage_is_refused_never_crashes(garbage: str) -> None:
    # Found by hypothesis: the compiled parser (sqlglotc) raises TypeError on "0?".
    with pytest.raises(SqlRejected, match=r"does not parse|placeholders|only SELECT|empty"):
        check_sql(garbage, POLICY, [])


@pytest.mark.unit
@pytest.mark.parametrize(
    "expression",
    [
        "row_to_json(c)",
        "jsonb_agg(amount)",
        "every(amount > 0)",
        "percentile_cont(0.5) WITHIN GROUP (ORDER BY amount)",
        "string_agg(provider, ',')",
        "date_part('year', signed_on)",
        "sum(amount) FILTER (WHERE year = 2025)",
        "lag(amount) OVER (ORDER BY id)",
        "to_char(amount, 'FM999G999')",
        "regexp_replace(provider, 'a', 'b')",
        "width_bucket(amount, 0, 500000, 5)",
    ],
)
def test_common_postgres_functions_are_allowed(expression: str) -> None:
    assert check_sql(f"SELECT {expression} FROM contracts c", POLICY, []).tables == ("contracts",)
