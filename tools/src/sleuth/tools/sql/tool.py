"""The ``sql_query`` tool: free-form SQL through the guard, then the read-only executor.

:class:`SqlQueryTool` owns (or borrows) an asyncpg pool. Build it with :meth:`SqlQueryTool.connect`
from a DSN, or pass a pool. Every call: arguments checked, the guard runs (a refusal never
reaches the database), then :func:`run_readonly`. The output carries the rows and a citation per
table read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import asyncpg
from opentelemetry import trace

from sleuth.core import spans
from sleuth.core.sql.guard import CheckedQuery, GuardPolicy, SqlRejected, check_sql
from sleuth.core.tools import SQL_QUERY, ToolSpec, bound_spec, sql_description_for
from sleuth.tools.base import Citation, ToolArgumentError, ToolOutput
from sleuth.tools.sql.executor import QueryResult, SqlLimits, run_readonly


@dataclass(frozen=True)
class SqlToolConfig:
    """What a sql_query tool needs besides its connection."""

    allowed_tables: tuple[str, ...]
    limits: SqlLimits = field(default_factory=SqlLimits)
    name: str = SQL_QUERY.name
    description: str | None = None
    extra_functions: tuple[str, ...] = ()

    @property
    def policy(self) -> GuardPolicy:
        return GuardPolicy.of(self.allowed_tables, self.extra_functions)


async def create_pool(dsn: str, *, max_size: int = 4) -> asyncpg.Pool:
    """An asyncpg pool for the tool (connect as a SELECT-only role)."""
    pool = await asyncpg.create_pool(dsn, min_size=0, max_size=max_size)
    assert pool is not None
    return pool


def citations_for(query: CheckedQuery) -> tuple[Citation, ...]:
    return tuple(
        Citation(id=f"sql:{table}", source=f"table {table}", text=query.sql)
        for table in query.tables
    )


def output_for(query: CheckedQuery, result: QueryResult) -> ToolOutput:
    return ToolOutput(content=result.to_json(), citations=citations_for(query))


def parse_params(arguments: dict[str, Any]) -> list[object]:
    params = arguments.get("params", [])
    if params is None:
        return []
    if not isinstance(params, list):
        raise ToolArgumentError("params must be an array of values", tool="sql_query")
    for i, value in enumerate(params):
        if isinstance(value, dict | list):
            raise ToolArgumentError(
                f"params[{i}] must be a string, number, boolean or null", tool="sql_query"
            )
    return params


class SqlQueryTool:
    """Free-form, guarded, read-only SQL."""

    def __init__(self, pool: asyncpg.Pool, config: SqlToolConfig, *, owns_pool: bool = False):
        self._pool = pool
        self._config = config
        self._policy = config.policy
        self._owns_pool = owns_pool
        base = SQL_QUERY
        if config.description is None:  # the default, completed with the allowed tables
            base = replace(SQL_QUERY, description=sql_description_for(list(config.allowed_tables)))
        self._spec = bound_spec(base, config.name, config.description)

    @classmethod
    async def connect(cls, dsn: str, config: SqlToolConfig) -> SqlQueryTool:
        return cls(await create_pool(dsn), config, owns_pool=True)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def check(self, sql: str, params: Sequence[object] | None) -> CheckedQuery:
        """The guard alone (raises :class:`~sleuth.core.sql.guard.SqlRejected`)."""
        return check_sql(sql, self._policy, params)

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        sql = arguments.get("query")
        if not isinstance(sql, str):
            raise ToolArgumentError("query must be an SQL string", tool=self._spec.name)
        unknown = set(arguments) - {"query", "params"}
        if unknown:
            raise ToolArgumentError(
                f"unknown argument(s): {', '.join(sorted(unknown))}", tool=self._spec.name
            )
        params = parse_params(arguments)
        span = trace.get_current_span()  # the verdict, never the SQL or its parameters
        try:
            checked = self.check(sql, params)
        except SqlRejected as err:
            # a refusal is the model's to fix: an argument error naming the rule that fired
            span.set_attribute(spans.SQL_GUARD_VERDICT, "refused")
            span.set_attribute(spans.SQL_GUARD_RULE, err.rule)
            raise ToolArgumentError(str(err), tool=self._spec.name) from None
        span.set_attribute(spans.SQL_GUARD_VERDICT, "accepted")
        result = await run_readonly(self._pool, checked, params, self._config.limits)
        return output_for(checked, result)

    async def ready(self) -> bool:
        """True when the database answers."""
        try:
            async with self._pool.acquire(timeout=2) as conn:
                return bool(await conn.fetchval("SELECT 1", timeout=2) == 1)
        except Exception:
            return False

    async def aclose(self) -> None:
        if self._owns_pool:
            await self._pool.close()
