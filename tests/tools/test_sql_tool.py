"""sql_query against a real PostgreSQL: the seed's answer, limits, faithful JSON, errors."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Any

import asyncpg
import pytest

from sleuth.tools.base import ToolArgumentError, ToolError
from sleuth.tools.sample.contracts import EXPECTED_COUNT, EXPECTED_TOTAL, SEED_PARAMS, SEED_SQL
from sleuth.tools.sql.executor import SqlLimits
from sleuth.tools.sql.tool import SqlQueryTool, SqlToolConfig

pytestmark = pytest.mark.integration


def _tool(pool: asyncpg.Pool, **limits: float) -> SqlQueryTool:
    return SqlQueryTool(
        pool, SqlToolConfig(allowed_tables=("contracts",), limits=SqlLimits(**limits))
    )  # type: ignore[arg-type]


async def test_seed_question_gives_seed_answer(reader_pool: asyncpg.Pool) -> None:
    out = await _tool(reader_pool).call({"query": SEED_SQL, "params": list(SEED_PARAMS)})
    assert out.content["rows"] == [
        {"num_contracts": EXPECTED_COUNT, "total_eur": format(EXPECTED_TOTAL, "f")}
    ]
    assert out.content["truncated"] is False
    assert [c.id for c in out.citations] == ["sql:contracts"]


async def test_string_params_are_coerced_to_column_types(reader_pool: asyncpg.Pool) -> None:
    out = await _tool(reader_pool).call({"query": SEED_SQL, "params": ["100000", "2025", "EU"]})
    assert out.content["rows"][0]["num_contracts"] == 47


async def test_bad_param_names_the_placeholder(reader_pool: asyncpg.Pool) -> None:
    with pytest.raises(ToolArgumentError, match=r"params\[1\] \(\$2\) 'last year'"):
        await _tool(reader_pool).call({"query": SEED_SQL, "params": [1, "last year", "EU"]})


async def test_row_cap_says_it_truncated(reader_pool: asyncpg.Pool) -> None:
    out = await _tool(reader_pool, max_rows=10).call(
        {"query": "SELECT id, amount, signed_on FROM contracts ORDER BY id"}
    )
    assert out.content["row_count"] == 10
    assert out.content["truncated"] is True
    first = out.content["rows"][0]
    assert isinstance(first["amount"], str)
    assert Decimal(first["amount"]) > 0
    assert date.fromisoformat(first["signed_on"]).year in (2024, 2025, 2026)


async def test_values_are_serialised_faithfully(reader_pool: asyncpg.Pool) -> None:
    out = await _tool(reader_pool).call(
        {
            "query": "SELECT 0.1::numeric + 0.2::numeric AS exact, 'NaN'::numeric AS nan, "
            "DATE '2025-02-28' AS d, TIMESTAMPTZ '2025-01-01 10:00:00+00' AS ts, "
            "INTERVAL '1 day 2 hours' AS iv, '\\xdead'::bytea AS b, "
            "12345678901234567::int8 AS big, "
            "ARRAY[1.50, 2.25]::numeric[] AS arr, NULL::text AS nothing"
        }
    )
    row = out.content["rows"][0]
    assert row["exact"] == "0.3"
    assert row["nan"] == "NaN"
    assert row["d"] == "2025-02-28"
    assert row["ts"].startswith("2025-01-01T10:00:00")
    assert row["iv"] == "P1DT7200S"
    assert row["b"] == "\\xdead"
    assert row["big"] == 12345678901234567
    assert row["arr"] == ["1.50", "2.25"]
    assert row["nothing"] is None


async def test_statement_timeout_cancels(reader_pool: asyncpg.Pool) -> None:
    # A cartesian product that runs far longer than the timeout (no pg_sleep: the guard refuses it).
    slow = "SELECT count(*) FROM contracts a, contracts b, contracts c, contracts d, contracts e"
    with pytest.raises(ToolError, match="statement_timeout") as info:
        await _tool(reader_pool, statement_timeout_seconds=0.2).call({"query": slow})
    assert not info.value.retryable


async def test_refusal_never_reaches_database(
    reader_pool: asyncpg.Pool, owner_conn: asyncpg.Connection, checksums: Any
) -> None:
    before = await checksums(owner_conn)
    with pytest.raises(
        ToolArgumentError, match=r"refused \(table_not_allowed\): .*not allowlisted"
    ):
        await _tool(reader_pool).call({"query": "SELECT * FROM payroll"})
    assert await checksums(owner_conn) == before


async def test_role_alone_refuses_other_tables(reader_pool: asyncpg.Pool) -> None:
    # Defence in depth: even past a (hypothetically) broken guard, the role cannot read payroll.
    async with reader_pool.acquire() as conn:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.fetch("SELECT * FROM payroll")
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await conn.execute("CREATE TABLE x (a int)")


async def test_unknown_argument_is_refused(reader_pool: asyncpg.Pool) -> None:
    with pytest.raises(ToolArgumentError, match="unknown argument"):
        await _tool(reader_pool).call({"query": "SELECT 1", "sql": "x"})


async def test_description_lists_allowed_tables(reader_pool: asyncpg.Pool) -> None:
    assert _tool(reader_pool).spec.description.endswith("Allowed tables: contracts.")
