"""The tool service's spans: a ``tool <name>`` span (SERVER) per call, child of the caller's
``traceparent`` on both transports, with the SQL guard's verdict, the statement's duration, the
rows and tables — and never a parameter's value, the SQL text, or the connection's credentials.

The service runs in this process over real HTTP (uvicorn in a thread) against the real
PostgreSQL of the tools' tests; its spans and the caller's are caught in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from sleuth.core import spans as names
from sleuth.core.tools import SQL_QUERY
from sleuth.tools.base import ToolArgumentError
from sleuth.tools.build import ServiceTools
from sleuth.tools.remote import RemoteTool
from sleuth.tools.service.app import create_app
from sleuth.tools.sql.tool import SqlQueryTool, SqlToolConfig
from tests.agent.tracing_doubles import (
    MemoryTracing,
    all_attribute_text,
    attrs,
    hex_span,
    hex_trace,
    parent_id,
)
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

SECRET = "Zq-secret-param-7731"  # a parameter value that must appear in no span
SECRET_SQL = "SELECT COUNT(*) AS n FROM contracts WHERE provider_region = $1 AND amount > $2"
SECRET_ARGS = {"query": SECRET_SQL, "params": [SECRET, 424242]}
ROWS_SQL = {"query": "SELECT id FROM contracts ORDER BY id LIMIT 3", "params": []}


@pytest.fixture
def service(postgres: Any) -> Iterator[tuple[str, MemoryTracing]]:
    memory = MemoryTracing(service="sleuth-tool-sql")

    async def load() -> ServiceTools:
        tool = await SqlQueryTool.connect(
            postgres.reader_dsn, SqlToolConfig(allowed_tables=("contracts",))
        )
        return ServiceTools("sql_query", {tool.spec.name: tool}, tool.ready, [tool.aclose])

    with serve_app(create_app(load, tracing=memory.tracing)) as app:
        yield app.url, memory


async def test_sql_spans_join_the_callers_trace_and_leak_no_values(
    service: tuple[str, MemoryTracing], postgres: Any
) -> None:
    url, memory = service
    caller = MemoryTracing(service="sleuth-agent-test")
    mcp, json_tool = RemoteTool(url, SQL_QUERY), RemoteTool(url, SQL_QUERY, transport="json")
    parents = []
    for tool, arguments in ((mcp, SECRET_ARGS), (json_tool, ROWS_SQL), (mcp, ROWS_SQL)):
        with caller.tracing.tracer.start_as_current_span("execute_tool sql_query") as parent:
            await tool.call(arguments)
        parents.append(parent)
    refused_call = {"query": "SELECT * FROM payroll WHERE name = $1", "params": [SECRET]}
    with (
        caller.tracing.tracer.start_as_current_span("execute_tool sql_query") as refused_parent,
        pytest.raises(ToolArgumentError, match=r"refused \(table_not_allowed\): .*not allowlisted"),
    ):
        await mcp.call(refused_call)

    served = [s for s in memory.spans() if s.name == "tool sql_query"]
    assert len(served) == 4
    by_parent = {parent_id(s): s for s in served}
    for parent, transport in zip(parents, ("mcp", "json", "mcp"), strict=True):
        span = by_parent[format(parent.get_span_context().span_id, "016x")]
        assert span.kind is SpanKind.SERVER
        assert hex_trace(span) == format(parent.get_span_context().trace_id, "032x")
        a = attrs(span)
        assert a[names.TOOL_NAME] == "sql_query"
        assert a[names.TOOL_TRANSPORT] == transport
        assert a[names.TOOL_OUTCOME] == "ok"
        assert a[names.SQL_GUARD_VERDICT] == "accepted"
        assert a[names.SQL_DURATION_MS] > 0
        assert list(a[names.SQL_TABLES]) == ["contracts"]
    assert attrs(by_parent[hex_span(parents[0])])[names.SQL_ROWS] == 1
    assert attrs(by_parent[hex_span(parents[1])])[names.SQL_ROWS] == 3

    refused = by_parent[format(refused_parent.get_span_context().span_id, "016x")]
    assert attrs(refused)[names.SQL_GUARD_VERDICT] == "refused"
    assert attrs(refused)[names.SQL_GUARD_RULE] == "table_not_allowed"  # which rule fired
    assert attrs(refused)[names.TOOL_OUTCOME] == "argument"
    assert refused.status.status_code is StatusCode.ERROR
    assert names.SQL_DURATION_MS not in attrs(refused)  # it never reached the database

    text = all_attribute_text(served)
    for leak in (SECRET, "424242", SECRET_SQL, "payroll WHERE", postgres.reader_dsn):
        assert leak not in text, f"{leak!r} is on a tool-service span"


def test_a_call_without_traceparent_is_a_root(service: tuple[str, MemoryTracing]) -> None:
    url, memory = service
    response = httpx.post(
        f"{url}/v1/tools/sql_query/call", json={"arguments": ROWS_SQL}, timeout=30
    )
    assert response.status_code == 200
    [span] = [s for s in memory.spans() if s.name == "tool sql_query"]
    assert span.parent is None
    assert attrs(span)[names.SQL_ROWS] == 3
