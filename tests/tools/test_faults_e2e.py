"""Faults across the whole path: ``sleuth agent`` as a process, the scripted model server, the
SQL and vector tool services as processes on the sample PostgreSQL and Qdrant folder.

- a model server that dies after a tool round: the router's degraded answer keeps the SQL result
  already gathered, and the trace shows every call that ran (item 6);
- 64 concurrent requests with the same new arguments: one execution per tool service (item 5);
- everything down: answers and traces name no internal address or server path (item 9).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.core.process import free_port
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from sleuth.scripted import ScriptedToolCall as Call
from sleuth.tools.sample.contracts import SEED_PARAMS, SEED_QUESTION, SEED_SQL
from tests.agent.agent_process import AgentProcess
from tests.support.metrics import parse_samples
from tests.tools.conftest import Postgres
from tests.tools.service_process import ServiceProcess, sql_binding

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SQL_CALL = Call(name="sql_query", arguments={"query": SEED_SQL, "params": list(SEED_PARAMS)})


def _config(model_url: str, tools: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "model": {"endpoint": model_url, "servedModelName": "scripted", "timeoutSeconds": 30},
        "tools": [
            {"name": name, "type": name, "endpoint": url, "timeoutSeconds": 60}
            for name, url in tools.items()
        ],
        **extra,
    }


@pytest.fixture
def services(sql_service: ServiceProcess, vector_service: ServiceProcess) -> dict[str, str]:
    return {"sql_query": sql_service.url, "vector_search": vector_service.url}


def test_the_fallback_keeps_the_evidence_gathered(
    scripted: ScriptedServer, services: dict[str, str], tmp_path: Path
) -> None:
    # The model asks for SQL, then its server fails (503, and 503 again on the retry).
    scripted.set_scenario(
        Scenario(
            turns=[
                ScriptedResponse(tool_calls=[SQL_CALL]),
                ScriptedResponse(status=503, error_message="the GPU fell over"),
            ]
        )
    )
    with AgentProcess(_config(scripted.url, services), tmp_path, name="fallback") as agent:
        body = agent.ask(SEED_QUESTION).json()
    trace = body["trace"]
    assert trace["degraded"] is True
    assert trace["stopReason"] == "answered"
    calls = [c for s in trace["steps"] if s["kind"] == "tools" for c in s["calls"]]
    assert [(c["tool"], c["status"]) for c in calls] == [
        ("sql_query", "ok"),  # the model's call, before its server failed
        ("vector_search", "ok"),  # the router's: it did not run the SQL again
    ]
    model_steps = [s for s in trace["steps"] if s["kind"] == "model"]
    assert any("503" in (s["error"] or "") for s in model_steps)
    answer = body["answer"]
    assert "deterministic router" in answer
    assert "num_contracts = 47" in answer  # the SQL result the model's call gathered
    assert "8,300,000.00" in answer
    assert "clause 8.3" in answer
    assert "sql:contracts" in {c["id"] for c in body["citations"]}


def test_a_stampede_runs_each_call_once(
    scripted: ScriptedServer,
    vector_service: ServiceProcess,
    postgres: Postgres,
    tmp_path: Path,
) -> None:
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    sql_service = ServiceProcess(sql_binding(statementTimeoutSeconds=120), tmp_path, env)
    sql_service.wait_healthy()
    services = {"sql_query": sql_service.url, "vector_search": vector_service.url}
    # A new argument set (no earlier call has it) that takes seconds, asked by 64 requests at
    # once, with the agent's cache off.
    arguments = {
        "query": "SELECT count(*) AS n FROM generate_series(1, $1::int) g",
        "params": [40000000],
    }
    scripted.set_scenario(
        Scenario(
            turns=[
                ScriptedResponse(tool_calls=[Call(name="sql_query", arguments=arguments)]),
                ScriptedResponse(content="counted"),
            ]
        )
    )
    config = _config(scripted.url, services, toolCacheTTLSeconds=0, maxConcurrentRequests=128)

    async def stampede(url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=120) as client:
            ask = {"question": "how many pairs?"}
            posts = (client.post(f"{url}/v1/query", json=ask) for _ in range(64))
            return list(await asyncio.gather(*posts))

    try:
        before = parse_samples(httpx.get(f"{sql_service.url}/metrics").text)
        with AgentProcess(config, tmp_path, name="stampede") as agent:
            responses = asyncio.run(stampede(agent.url))
        after = parse_samples(httpx.get(f"{sql_service.url}/metrics").text)
    finally:
        sql_service.stop()
    assert [r.status_code for r in responses] == [200] * 64
    statuses = {
        c["status"]
        for r in responses
        for s in r.json()["trace"]["steps"]
        if s["kind"] == "tools"
        for c in s["calls"]
    }
    assert statuses == {"ok"}

    def calls(samples: dict[Any, float]) -> float:
        return sum(
            v for (name, labels), v in samples.items() if name == "sleuth_tool_service_calls_total"
        )

    assert calls(after) - calls(before) == 1  # the agent sent one call, not 64


def test_answers_and_traces_name_no_address(scripted: ScriptedServer, tmp_path: Path) -> None:
    dead = {name: f"http://127.0.0.1:{free_port()}" for name in ("sql_query", "vector_search")}
    scripted.set_scenario(
        Scenario(
            turns=[
                ScriptedResponse(tool_calls=[SQL_CALL]),
                ScriptedResponse(content="nothing found"),
            ]
        )
    )
    texts = []
    with AgentProcess(_config(scripted.url, dead), tmp_path, name="tools-down") as agent:
        texts.append(agent.ask(SEED_QUESTION).text)
    model_port = free_port()
    down = _config(f"http://127.0.0.1:{model_port}/v1", dead)
    with AgentProcess(down, tmp_path, name="all-down") as agent:
        texts.append(agent.ask(SEED_QUESTION).text)
        texts.append(
            httpx.post(
                f"{agent.url}/v1/chat/completions",
                json={"messages": [{"role": "user", "content": SEED_QUESTION}]},
                timeout=60,
            ).text
        )
    for text in texts:
        body = json.loads(text)
        assert "127.0.0.1" not in text, body
        for port in [model_port, *(int(u.rsplit(":", 1)[1]) for u in dead.values())]:
            assert f":{port}" not in text, body
        assert "/tmp/" not in text
        assert "Traceback" not in text
    assert "unavailable" in texts[0]  # the failure is still said, without the address
    assert "model server unreachable" in texts[1]
