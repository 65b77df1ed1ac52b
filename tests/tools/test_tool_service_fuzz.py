"""Fuzzing ``sleuth tool-service`` (issue 34): arbitrary bytes, arbitrary JSON and valid calls
with a part replaced by arbitrary JSON, on its JSON route and its MCP route, and any method on
any path. The service is a real process serving sql_query over a real PostgreSQL as the
SELECT-only reader, so a fuzzed call the SQL guard accepts runs. No answer is a 5xx, and every
error has the documented shape (the JSON route: ``{"error": {"message", "type", "field", "kind",
"tool"}}``; ``/mcp``: a JSON-RPC error). Bounded: about 15 s on a loaded 2-core host.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.fuzz import CONTENT_TYPES, TEXT, bodies, check_response
from tests.tools.conftest import Postgres
from tests.tools.service_process import ServiceProcess, sql_binding

pytestmark = pytest.mark.integration

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MCP_ACCEPT = "application/json, text/event-stream"

_SQL = "SELECT count(*) AS n FROM contracts WHERE year = $1"
CALLS = [
    {"arguments": {"query": _SQL, "params": [2025]}},
    {"arguments": {"query": "SELECT provider_region, sum(amount) FROM contracts GROUP BY 1"}},
]
MCP = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
     "params": {"name": "sql_query", "arguments": CALLS[0]["arguments"]}},
    {"jsonrpc": "2.0", "id": "l", "method": "tools/list", "params": {}},
    {"jsonrpc": "2.0", "id": 2, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "fuzz", "version": "1"}}},
]  # fmt: skip
GETS = ["/healthz", "/readyz", "/metrics", "/v1/tools"]


@pytest.fixture(scope="module")
def service(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    folder: Path = tmp_path_factory.mktemp("fuzz-sql")
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    process = ServiceProcess(sql_binding(), folder, env).wait_healthy()
    try:
        with httpx.Client(base_url=process.url, timeout=30) as client:
            yield client
    finally:
        process.stop()


@FUZZ
@given(data=st.data(), name=st.sampled_from(["sql_query"]) | TEXT, content_type=CONTENT_TYPES)
def test_any_body_on_the_json_route(
    service: httpx.Client, data: st.DataObject, name: str, content_type: str
) -> None:
    body = data.draw(bodies(CALLS), label="body")
    path = quote(f"/v1/tools/{name}/call".encode("utf-8", "surrogatepass"), safe="/")
    headers = {"content-type": content_type} if content_type else {}
    check_response(service.post(path, content=body, headers=headers))


@FUZZ
@given(data=st.data(), content_type=CONTENT_TYPES, accept=st.sampled_from([MCP_ACCEPT, "", "*/*"]))
def test_any_body_on_mcp(
    service: httpx.Client, data: st.DataObject, content_type: str, accept: str
) -> None:
    body = data.draw(bodies(MCP), label="body")
    headers: dict[str, Any] = {"content-type": content_type} if content_type else {}
    if accept:
        headers["accept"] = accept
    check_response(service.post("/mcp", content=body, headers=headers), jsonrpc=True)


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
    path=st.sampled_from([*GETS, "/mcp", "/v1/tools/sql_query/call"]) | TEXT.map(lambda t: "/" + t),
    body=st.binary(max_size=32),
)
def test_any_method_on_any_path(service: httpx.Client, method: str, path: str, body: bytes) -> None:
    url = quote(path.encode("utf-8", "surrogatepass"), safe="/")
    headers = {"accept": MCP_ACCEPT} if path == "/mcp" else {}
    response = service.request(
        method, url, content=body if method != "GET" else None, headers=headers
    )
    check_response(response, jsonrpc=path == "/mcp")
