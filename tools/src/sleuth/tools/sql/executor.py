"""Run a guarded query: READ ONLY transaction, SET LOCAL statement_timeout, a row cap.

Every query runs inside ``BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`` with
``SET LOCAL statement_timeout``, ``lock_timeout`` and ``standard_conforming_strings = on`` (so
PostgreSQL reads backslashes in strings the way the guard's parser did), as a prepared statement
(the extended protocol refuses a second statement) through a cursor that stops after
``max_rows + 1`` rows: the result says when it truncated. The transaction always ends in a
rollback; nothing a query does can persist.

Parameters from the model (JSON values) are coerced to the types PostgreSQL inferred for the
placeholders (``"2025"`` for an integer, ``100000`` for a numeric, ``"2025-01-31"`` for a date);
a value that does not fit is an argument error naming the placeholder.

Failures keep their kind (:mod:`sleuth.tools.base`): no free connection within
``acquire_timeout_seconds`` is :class:`ToolBusy`; credentials or grants the database refuses, a
connection URI that cannot be used, and connection settings the server refuses (an unknown option
in the URI) are :class:`ToolMisconfigured`; a database that cannot be reached, or cannot take a
connection now, is :class:`ToolUnavailable`; what PostgreSQL says about the query itself is an
argument error. Messages name no host, port or socket path (those go to the log). A caller that is
cancelled (its timeout, its client gone) cancels the statement on the server: asyncpg sends
PostgreSQL a cancel request, and the connection goes back to the pool.

On the active span (the tool service's, or the agent's ``execute_tool`` for an in-process tool)
go the statement's duration, the rows returned, whether the cap cut them and the tables read —
never the parameters' values.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import asyncpg
from opentelemetry import trace

from sleuth.core import spans
from sleuth.core.sql.guard import CheckedQuery
from sleuth.tools.base import (
    ToolArgumentError,
    ToolBusy,
    ToolError,
    ToolMisconfigured,
    ToolUnavailable,
)
from sleuth.tools.sql.values import JsonValue, to_json

log = logging.getLogger("sleuth.tools.sql")

_INT_TYPES = {"int2", "int4", "int8", "oid"}
# SQLSTATEs that mean the tool's configuration is wrong, not the query: invalid authorization
# (28xxx: a wrong password, an unknown role), unknown database, missing grants on an allowlisted
# table.
_MISCONFIGURED = (
    asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidCatalogNameError,
    asyncpg.InsufficientPrivilegeError,
)
_UNREACHABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
    asyncpg.AdminShutdownError,
    OSError,
)
# Refusals of a new connection that pass: out of resources (53), shutting down or starting (57).
_NOT_NOW = (asyncpg.InsufficientResourcesError, asyncpg.OperatorInterventionError)
_FLOAT_TYPES = {"float4", "float8"}


@dataclass(frozen=True)
class SqlLimits:
    """Per-query limits."""

    max_rows: int = 100
    statement_timeout_seconds: float = 5.0
    lock_timeout_seconds: float = 1.0
    acquire_timeout_seconds: float = 2.0


@dataclass(frozen=True)
class QueryResult:
    """Column names, rows as objects, and whether the row cap cut the result."""

    columns: tuple[str, ...]
    rows: tuple[dict[str, JsonValue], ...]
    truncated: bool
    max_rows: int

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "rows": [dict(r) for r in self.rows],
            "row_count": len(self.rows),
            "truncated": self.truncated,
            "max_rows": self.max_rows,
        }


def _coerce(value: object, type_name: str, index: int) -> object:
    """A JSON parameter converted to what asyncpg expects for a parameter of ``type_name``."""
    if value is None:
        return None
    try:
        if type_name in _INT_TYPES:
            if isinstance(value, bool):
                raise ValueError("a boolean is not an integer")
            if isinstance(value, float) and not value.is_integer():
                raise ValueError("not an integer")
            return int(value) if isinstance(value, int | float) else int(str(value).strip())
        if type_name == "numeric":
            if isinstance(value, bool):
                raise ValueError("a boolean is not a number")
            return Decimal(str(value))
        if type_name in _FLOAT_TYPES:
            return float(value)  # type: ignore[arg-type]
        if type_name == "date" and isinstance(value, str):
            return date.fromisoformat(value)
        if type_name in {"timestamp", "timestamptz"} and isinstance(value, str):
            return datetime.fromisoformat(value)
        if type_name == "bool" and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in {"true", "false"}:
                return lowered == "true"
            raise ValueError("expected true or false")
        if type_name in {"text", "varchar", "bpchar", "name"} and not isinstance(value, str):
            return str(value)
    except (ValueError, TypeError, InvalidOperation) as err:
        raise ToolArgumentError(
            f"params[{index - 1}] (${index}) {value!r} is not a valid {type_name}: {err}",
            tool="sql_query",
        ) from None
    return value


async def _acquire(pool: asyncpg.Pool, timeout_s: float) -> asyncpg.Connection:
    """A connection within ``timeout_s``, or :class:`ToolBusy` when all of them are taken.

    What the server answers to a new connection before any query ran is about the connection,
    never the query: a server that cannot take it now (SQLSTATE classes 08, 53, 57) is
    unavailable, one that refuses the role or the database (28, 3D) — and any other refusal,
    such as an option of the connection URI it does not know (``?foo=bar`` is sent as a setting:
    42704 unrecognized configuration parameter) or a value it rejects (22023) — is a
    misconfiguration, never an argument error the model would try to fix."""
    try:
        conn: asyncpg.Connection = await pool.acquire(timeout=timeout_s)
    except asyncpg.PostgresError as err:
        if isinstance(err, _MISCONFIGURED + _UNREACHABLE + _NOT_NOW):
            raise
        log.warning("sql_query: the database refused a connection's settings: %s", err)
        raise ToolMisconfigured(
            "the sql_query tool is unavailable: the database refused its connection settings "
            f"({type(err).__name__}, SQLSTATE {err.sqlstate}); an operator must fix "
            "SLEUTH_SQL_CONNECTION_URI",
            tool="sql_query",
        ) from None
    except TimeoutError:
        if pool.get_size() >= pool.get_max_size() and pool.get_idle_size() == 0:
            raise ToolBusy(
                f"the sql_query tool is busy: all {pool.get_max_size()} database connections are "
                f"in use and none was free within {timeout_s:g} s (sqlQuery.poolSize, "
                "sqlQuery.acquireTimeoutSeconds); try again shortly",
                tool="sql_query",
            ) from None
        raise ToolUnavailable(
            f"the database did not accept a connection within {timeout_s:g} s "
            "(sqlQuery.acquireTimeoutSeconds); try again later",
            tool="sql_query",
        ) from None
    return conn


def _unique(names: list[str]) -> tuple[str, ...]:
    """Column names made unique (``id``, ``id_2``) so rows can be objects."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return tuple(out)


async def run_readonly(
    pool: asyncpg.Pool,
    query: CheckedQuery,
    params: Sequence[object],
    limits: SqlLimits,
) -> QueryResult:
    """Execute an accepted query under the limits; map database errors to tool errors."""
    timeout_ms = max(1, int(limits.statement_timeout_seconds * 1000))
    lock_ms = max(1, int(limits.lock_timeout_seconds * 1000))
    span = trace.get_current_span()
    span.set_attribute(spans.SQL_TABLES, list(query.tables))
    started = time.perf_counter()
    try:
        conn = await _acquire(pool, limits.acquire_timeout_seconds)
        try:
            tx = conn.transaction(isolation="repeatable_read", readonly=True)
            await tx.start()
            try:
                await conn.execute(
                    f"SET LOCAL statement_timeout = {timeout_ms}; "
                    f"SET LOCAL lock_timeout = {lock_ms}; "
                    "SET LOCAL standard_conforming_strings = on"
                )
                stmt = await conn.prepare(query.sql)
                types = [t.name for t in stmt.get_parameters()]
                args = [
                    _coerce(v, t, i) for i, (v, t) in enumerate(zip(params, types, strict=True), 1)
                ]
                columns = _unique([a.name for a in stmt.get_attributes()])
                started = time.perf_counter()
                cursor = await stmt.cursor(*args)
                records = await cursor.fetch(limits.max_rows + 1)
                span.set_attribute(spans.SQL_DURATION_MS, _ms_since(started))
            finally:
                if not conn.is_closed():
                    await tx.rollback()
        finally:
            await pool.release(conn)
    except ToolError:
        raise
    except asyncpg.QueryCanceledError:
        span.set_attribute(spans.SQL_DURATION_MS, _ms_since(started))
        raise ToolError(
            f"the query was cancelled after {limits.statement_timeout_seconds:g} s "
            "(statement_timeout); simplify it or filter more",
            tool="sql_query",
        ) from None
    except _MISCONFIGURED as err:
        log.warning("sql_query: the database refused the tool's role: %s", err)
        raise ToolMisconfigured(
            "the sql_query tool is unavailable: the database refused its credentials or grants "
            f"({type(err).__name__}); an operator must fix the tool's configuration",
            tool="sql_query",
        ) from None
    except (ValueError, asyncpg.ClientConfigurationError) as err:  # a URI asyncpg cannot use
        log.warning("sql_query: the connection URI cannot be used: %s", type(err).__name__)
        raise ToolMisconfigured(
            "the sql_query tool is unavailable: its connection URI cannot be used; an operator "
            "must fix SLEUTH_SQL_CONNECTION_URI",
            tool="sql_query",
        ) from None
    except (TimeoutError, *_UNREACHABLE, *_NOT_NOW) as err:
        log.warning("sql_query: database unreachable: %r", err)
        raise ToolUnavailable(
            f"the database is unreachable ({type(err).__name__}); try again later",
            tool="sql_query",
        ) from None
    except asyncpg.PostgresError as err:
        raise ToolArgumentError(
            f"the database refused the query: {err}", tool="sql_query"
        ) from None
    truncated = len(records) > limits.max_rows
    span.set_attribute(spans.SQL_ROWS, min(len(records), limits.max_rows))
    span.set_attribute(spans.SQL_TRUNCATED, truncated)
    rows = tuple(
        {name: to_json(value) for name, value in zip(columns, record.values(), strict=True)}
        for record in records[: limits.max_rows]
    )
    return QueryResult(columns=columns, rows=rows, truncated=truncated, max_rows=limits.max_rows)


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
