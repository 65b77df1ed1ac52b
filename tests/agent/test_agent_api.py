"""The agent's HTTP API end to end: agent over HTTP, scripted model over HTTP, in-process tools."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import httpx
import openai
import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    SEED_SEARCH,
    SEED_SQL,
    seed_sql,
    seed_vector,
)
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

SEED_SCENARIO = Scenario(
    turns=[
        ScriptedResponse(tool_calls=[ScriptedToolCall(name="sql_query", arguments=SEED_SQL)]),
        ScriptedResponse(
            tool_calls=[ScriptedToolCall(name="vector_search", arguments=SEED_SEARCH)]
        ),
        ScriptedResponse(content=SEED_ANSWER),
    ]
)


def _config(model_url: str, **extra: object) -> AgentConfig:
    return AgentConfig.model_validate(
        {"model": {"endpoint": model_url, "servedModelName": "scripted"}, **extra}
    )


@pytest.fixture
def agent_url(scripted: ScriptedServer) -> Iterator[str]:
    scripted.set_scenario(SEED_SCENARIO)
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    with serve_app(create_app(_config(scripted.url), tools=tools, name="contracts")) as app:
        yield app.url


def test_seed_trace_through_query_endpoint(agent_url: str) -> None:
    response = httpx.post(f"{agent_url}/v1/query", json={"question": SEED_QUESTION}, timeout=30)
    assert response.status_code == 200
    body = response.json()
    assert body["answer"] == SEED_ANSWER
    assert [c["id"] for c in body["citations"]] == ["chunk_1", "chunk_2", "chunk_3"]
    trace = body["trace"]
    assert trace["iterations"] == 2
    assert trace["stopReason"] == "answered"
    tool_steps = [s for s in trace["steps"] if s["kind"] == "tools"]
    assert [s["calls"][0]["tool"] for s in tool_steps] == ["sql_query", "vector_search"]
    assert tool_steps[0]["calls"][0]["arguments"] == SEED_SQL

    metrics = httpx.get(f"{agent_url}/metrics").text
    assert (
        'sleuth_agent_tool_calls_total{agent="contracts",outcome="ok",tool="sql_query"} 1.0'
        in metrics
    )
    assert 'sleuth_agent_iterations_sum{agent="contracts"} 2.0' in metrics
    assert "sleuth_agent_model_ttft_seconds_count" in metrics


def test_openai_client_talks_to_the_agent(agent_url: str) -> None:
    client = openai.OpenAI(base_url=f"{agent_url}/v1", api_key="unused", max_retries=0)
    assert [m.id for m in client.models.list()] == ["contracts"]
    completion = client.chat.completions.create(
        model="contracts", messages=[{"role": "user", "content": SEED_QUESTION}]
    )
    assert completion.choices[0].message.content == SEED_ANSWER
    extra = completion.model_extra or {}
    assert extra["sleuth"]["trace"]["iterations"] == 2
    stream = client.chat.completions.create(
        model="contracts", messages=[{"role": "user", "content": SEED_QUESTION}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == SEED_ANSWER


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/query", {}, "question"),
        ("/v1/query", {"question": ""}, "question"),
        ("/v1/query", {"question": "q", "colour": 1}, "colour"),
        ("/v1/chat/completions", {"messages": []}, "messages"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]},
            "messages.1",
        ),
    ],
)
def test_bad_requests_name_the_field(
    agent_url: str, path: str, body: dict[str, object], field: str
) -> None:
    response = httpx.post(f"{agent_url}{path}", json=body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["field"] == field
    assert error["message"].startswith(field)


def test_health_and_readiness(agent_url: str) -> None:
    assert httpx.get(f"{agent_url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{agent_url}/readyz").status_code == 200


def test_not_ready_without_model_server_unless_the_router_stands_in() -> None:
    strict = _config("http://127.0.0.1:9/v1", planner={"fallbackToRouter": False})
    with serve_app(create_app(strict, tools={})) as app:
        response = httpx.get(f"{app.url}/readyz")
    assert response.status_code == 503
    assert "unreachable" in response.json()["error"]["message"]
    with serve_app(create_app(_config("http://127.0.0.1:9/v1"), tools={})) as app:
        response = httpx.get(f"{app.url}/readyz")
    assert response.status_code == 200
    assert response.json()["status"].startswith("degraded: model server unreachable")


def test_model_down_degrades_to_the_router_and_says_so() -> None:
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    with serve_app(create_app(_config("http://127.0.0.1:9/v1"), tools=tools)) as app:
        body = httpx.post(
            f"{app.url}/v1/query", json={"question": SEED_QUESTION}, timeout=30
        ).json()
        metrics = httpx.get(f"{app.url}/metrics").text
    assert body["answer"].startswith("The model server is unavailable (model server unreachable")
    assert "deterministic router" in body["answer"]
    assert body["trace"]["degraded"] is True
    assert body["trace"]["model"].startswith("router")
    assert 'sleuth_agent_degraded_requests_total{agent="sleuth-agent"} 1.0' in metrics


def test_backpressure_answers_429_instead_of_queueing(scripted: ScriptedServer) -> None:
    gate = threading.Event()

    def hold(_: dict[str, object]) -> ScriptedResponse | None:
        gate.wait(10)  # the first request stays in flight until the test lets it go
        return ScriptedResponse(content="done")

    scripted.state.responder = hold
    config = _config(scripted.url, maxConcurrentRequests=1)
    with serve_app(create_app(config, tools={})) as app:
        results: list[int] = []
        first = threading.Thread(
            target=lambda: results.append(
                httpx.post(f"{app.url}/v1/query", json={"question": "a"}, timeout=30).status_code
            )
        )
        first.start()
        try:
            while not scripted.requests():  # the first request reached the model
                threading.Event().wait(0.01)
            second = httpx.post(f"{app.url}/v1/query", json={"question": "b"}, timeout=30)
        finally:
            gate.set()
            first.join()
        metrics = httpx.get(f"{app.url}/metrics").text
    assert second.status_code == 429
    assert second.headers["retry-after"] == "1"
    assert second.json()["error"]["type"] == "overloaded"
    assert results == [200]
    assert 'sleuth_agent_rejected_requests_total{agent="sleuth-agent",reason="overloaded"} 1.0' in (
        metrics
    )
