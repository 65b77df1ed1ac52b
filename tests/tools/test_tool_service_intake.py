"""Bodies that reached a 500 on ``sleuth tool-service`` (issue 34): deep nesting, bytes that are
not UTF-8, lone surrogates. Refused on the JSON route in its error shape, on ``/mcp`` as JSON-RPC
errors (never -32603), before the tool runs (the service's own call counter does not move).
The service as a real process over a real PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.metrics import parse_samples
from tests.tools.service_process import ServiceProcess

pytestmark = pytest.mark.integration

DEEP = b"[" * 100_000 + b"]" * 100_000
CALL = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","'
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def _calls(service: ServiceProcess) -> float:
    """Tool calls the service ran, whatever their outcome."""
    samples = parse_samples(httpx.get(f"{service.url}/metrics", timeout=10).text)
    return sum(v for (name, _), v in samples.items() if name == "sleuth_tool_service_calls_total")


def _post_json(service: ServiceProcess, body: bytes) -> httpx.Response:
    url = f"{service.url}/v1/tools/sql_query/call"
    return httpx.post(url, content=body, headers={"content-type": "application/json"}, timeout=30)


def _post_mcp(service: ServiceProcess, body: bytes) -> httpx.Response:
    return httpx.post(f"{service.url}/mcp", content=body, headers=MCP_HEADERS, timeout=30)


def _mcp_call(arguments: Any) -> bytes:
    params = {"name": "sql_query", "arguments": arguments}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return json.dumps(call).encode()


@pytest.mark.parametrize(
    ("body", "status", "field", "message"),
    [
        (b'{"arguments":{"query":' + DEEP + b"}}", 400, None, "more than 64 levels deep"),
        (b'{"arguments":{"query":"SELECT \xff"}}', 400, None, "not UTF-8 at byte 30"),
        (b'{"arguments":{"query":"SELECT \\ud800"}}', 422, "arguments.query", "lone UTF-16"),
        (b'{"arguments":{"query":"SELECT 1","params":[NaN]}}', 400, None, "NaN is not JSON"),
    ],
    ids=["deep", "not-utf8", "surrogate", "nan"],
)
def test_the_json_route_refuses_in_its_shape(
    sql_service: ServiceProcess, body: bytes, status: int, field: str | None, message: str
) -> None:
    before = _calls(sql_service)
    response = _post_json(sql_service, body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert (error["field"], error["kind"], error["tool"]) == (field, "argument", "sql_query")
    assert message in error["message"]
    assert _calls(sql_service) == before  # the tool never ran


@pytest.mark.parametrize(
    ("body", "status", "code", "field"),
    [
        (CALL + b'params":' + DEEP + b"}", 400, -32700, None),
        (CALL + b'params":{"name":"\xff"}}', 400, -32700, None),
        (_mcp_call({"query": "SELECT '\ud800'"}), 422, -32600, "params.arguments.query"),
        (b'{"jsonrpc":"2.0","id":7,"method":"\\udfff"}', 422, -32600, "method"),
    ],
    ids=["deep", "not-utf8", "surrogate-argument", "surrogate-method"],
)
def test_mcp_refuses_with_json_rpc_errors_not_internal_ones(
    sql_service: ServiceProcess, body: bytes, status: int, code: int, field: str | None
) -> None:
    before = _calls(sql_service)
    response = _post_mcp(sql_service, body)
    assert response.status_code == status, response.text
    reply = response.json()
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] is None
    assert reply["error"]["code"] == code
    assert reply["error"]["data"] == {"field": field}
    assert _calls(sql_service) == before


def test_mcp_still_serves_after_the_refusals(sql_service: ServiceProcess) -> None:
    before = _calls(sql_service)
    response = _post_mcp(sql_service, _mcp_call({"query": "SELECT count(*) AS n FROM contracts"}))
    assert response.status_code == 200, response.text
    assert _calls(sql_service) == before + 1  # the counter the refusals left alone counts
    result = response.json()["result"]
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"])["content"]["rows"][0]["n"] > 0


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_mcp_offers_no_stream_and_no_session(sql_service: ServiceProcess, method: str) -> None:
    """A GET stream of a stateless service never carried anything and stayed open for ever
    (the fuzzer's find, issue 34): 405, as MCP allows, in the usual error shape."""
    headers = {"accept": "application/json, text/event-stream"}
    response = httpx.request(method, f"{sql_service.url}/mcp", headers=headers, timeout=10)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json()["error"]["type"] == "method_not_allowed"


@pytest.mark.parametrize("content_type", [None, "text/plain"])
def test_mcp_refuses_a_body_not_declared_json(
    sql_service: ServiceProcess, content_type: str | None
) -> None:
    """The MCP SDK answered this in plain text; now a JSON-RPC error (the fuzzer's find)."""
    headers = {"accept": "application/json, text/event-stream"}
    if content_type:
        headers["content-type"] = content_type
    url = f"{sql_service.url}/mcp"
    response = httpx.post(url, content=_mcp_call({"query": "SELECT 1"}), headers=headers)
    assert response.status_code == 415
    assert response.json()["error"]["code"] == -32600
    assert "Content-Type: application/json" in response.json()["error"]["message"]
