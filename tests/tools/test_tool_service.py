"""``sleuth tool-service`` as a real process: MCP and JSON transports, health, metrics, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.process import free_port
from sleuth.core.tools import SQL_QUERY
from sleuth.tools.base import ToolArgumentError, ToolUnavailable
from sleuth.tools.remote import RemoteTool, build_remote_tool
from sleuth.tools.sample.contracts import EXPECTED_COUNT, EXPECTED_TOTAL, SEED_PARAMS, SEED_SQL
from tests.tools.service_process import ServiceProcess, sql_binding

pytestmark = pytest.mark.integration

SEED_ARGS = {"query": SEED_SQL, "params": list(SEED_PARAMS)}
SEED_ROW = {"num_contracts": EXPECTED_COUNT, "total_eur": format(EXPECTED_TOTAL, "f")}


def test_health_ready_and_tool_list(sql_service: ServiceProcess) -> None:
    assert httpx.get(f"{sql_service.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{sql_service.url}/readyz").json() == {"ready": True}
    listed = httpx.get(f"{sql_service.url}/v1/tools").json()
    assert listed["kind"] == "sql_query"
    [entry] = listed["tools"]
    assert entry["function"]["name"] == "sql_query"
    assert entry["function"]["parameters"] == SQL_QUERY.parameters
    assert "Allowed tables: contracts." in entry["function"]["description"]


def test_json_endpoint_answers_and_refuses(sql_service: ServiceProcess) -> None:
    url = f"{sql_service.url}/v1/tools/sql_query/call"
    ok = httpx.post(url, json={"arguments": SEED_ARGS}, timeout=30)
    assert ok.status_code == 200
    assert ok.json()["content"]["rows"] == [SEED_ROW]
    assert ok.json()["citations"][0]["id"] == "sql:contracts"
    refused = httpx.post(url, json={"arguments": {"query": "DROP TABLE contracts"}}, timeout=30)
    assert refused.status_code == 422
    assert refused.json()["error"]["kind"] == "argument"
    assert "only SELECT is allowed, found DROP" in refused.json()["error"]["message"]
    bad = httpx.post(url, json=["not", "an", "object"], timeout=30)
    assert bad.status_code == 422


async def test_remote_tool_over_mcp(sql_service: ServiceProcess) -> None:
    tool = RemoteTool(sql_service.url, SQL_QUERY)
    out = await tool.call(SEED_ARGS)
    assert out.content["rows"] == [SEED_ROW]
    assert [c.id for c in out.citations] == ["sql:contracts"]
    with pytest.raises(ToolArgumentError, match="table 'payroll' is not allowlisted"):
        await tool.call({"query": "SELECT * FROM payroll"})
    [listed] = await tool.list_remote_specs()
    assert listed.name == "sql_query"


async def test_remote_tool_over_json(sql_service: ServiceProcess) -> None:
    tool = RemoteTool(sql_service.url, SQL_QUERY, transport="json")
    assert (await tool.call(SEED_ARGS)).content["rows"] == [SEED_ROW]
    with pytest.raises(ToolArgumentError, match="exactly one statement"):
        await tool.call({"query": "SELECT 1; SELECT 2"})


def test_registry_builder_reads_the_spec_from_the_service(sql_service: ServiceProcess) -> None:
    config = ToolConfig(name="sql_query", type="sql_query", endpoint=sql_service.url)
    tool = build_remote_tool(config)
    assert tool.spec.description.endswith("Allowed tables: contracts.")


def test_metrics_count_calls(sql_service: ServiceProcess) -> None:
    url = f"{sql_service.url}/v1/tools/sql_query/call"
    httpx.post(url, json={"arguments": {"query": "SELECT 1 FROM contracts LIMIT 1"}}, timeout=30)
    text = httpx.get(f"{sql_service.url}/metrics").text
    assert 'sleuth_tool_service_calls_total{outcome="ok",tool="sql_query",transport="json"}' in text
    assert "sleuth_tool_service_call_seconds_bucket" in text


async def test_down_service_is_unavailable() -> None:
    tool = RemoteTool(f"http://127.0.0.1:{free_port()}", SQL_QUERY, timeout_seconds=5)
    with pytest.raises(ToolUnavailable, match="tool service unreachable"):
        await tool.call(SEED_ARGS)


def test_unready_database_and_missing_credential(tmp_path: Path) -> None:
    env = {"SLEUTH_SQL_CONNECTION_URI": f"postgresql://nobody@127.0.0.1:{free_port()}/x"}
    service = ServiceProcess(sql_binding(), tmp_path, env).wait_healthy()
    try:
        assert httpx.get(f"{service.url}/readyz", timeout=10).status_code == 503
        call = httpx.post(
            f"{service.url}/v1/tools/sql_query/call", json={"arguments": SEED_ARGS}, timeout=30
        )
        assert call.status_code == 503
        assert call.json()["error"]["kind"] == "unavailable"
    finally:
        service.stop()
    missing = ServiceProcess(sql_binding(), tmp_path, {"SLEUTH_SQL_CONNECTION_URI": ""})
    assert missing.process.wait(timeout=60) != 0
    assert "SLEUTH_SQL_CONNECTION_URI is not set" in missing.log.read_text()


async def test_templates_only_no_free_form_sql(
    postgres: Any, tmp_path: Path, owner_conn: asyncpg.Connection, checksums: Any
) -> None:
    template = {
        "name": "contracts_summary",
        "description": "Count and total of contracts above an amount in a year and region.",
        "sql": SEED_SQL,
        "parameters": [
            {"name": "min_amount", "type": "number"},
            {"name": "year", "type": "integer"},
            {"name": "region", "type": "string"},
        ],
    }
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(sql_binding(templates=[template]), tmp_path, env).wait_healthy()
    before = await checksums(owner_conn)
    try:
        async with httpx.AsyncClient() as client:
            [entry] = (await client.get(f"{service.url}/v1/tools")).json()["tools"]
        assert entry["function"]["name"] == "contracts_summary"
        assert entry["function"]["parameters"]["additionalProperties"] is False
        tool = build_remote_tool(
            ToolConfig(name="contracts_summary", type="sql_query", endpoint=service.url)
        )
        out = await tool.call({"min_amount": 100000, "year": 2025, "region": "EU"})
        assert out.content["rows"] == [SEED_ROW]
        with pytest.raises(ToolArgumentError, match="year must be an integer"):
            await tool.call({"min_amount": 1, "year": "2025; DROP TABLE contracts", "region": "EU"})
        free_form = RemoteTool(service.url, SQL_QUERY)
        with pytest.raises(ToolArgumentError, match="unknown tool 'sql_query'"):
            await free_form.call({"query": "SELECT * FROM contracts"})
    finally:
        service.stop()
    assert await checksums(owner_conn) == before


def test_a_template_the_guard_refuses_stops_the_service(postgres: Any, tmp_path: Path) -> None:
    template = {"name": "wipe", "description": "Never.", "sql": "DELETE FROM contracts"}
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(sql_binding(templates=[template]), tmp_path, env)
    assert service.process.wait(timeout=60) == 2
    log = service.log.read_text()
    # one line, naming the template and the rule that fired
    assert "error: template 'wipe': query refused (not_select): only SELECT is allowed" in log
    assert "Traceback" not in log
