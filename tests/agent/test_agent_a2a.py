"""The agent as an A2A agent, driven by the published ``a2a-sdk`` client against ``sleuth agent``
as a process and the scripted model server: card, send, stream, get, cancel, limits."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_data_parts
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import LatencyProfile, Scenario, ScriptedServer
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    seed_sql,
    seed_tools,
    seed_turns,
    seed_vector,
)
from tests.agent.agent_process import AgentProcess
from tests.support.asgi import serve_app
from tests.support.metrics import parse_samples
from tests.support.polling import eventually

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    latency = LatencyProfile(per_token_ms=20.0)
    with ScriptedServer(Scenario(turns=seed_turns(), latency=latency)) as server:
        yield server


def _agent(model_url: str, workdir: Path, name: str, **extra: Any) -> AgentProcess:
    config = {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "tools": extra.pop("tools", seed_tools()),
        "planner": {"fallbackToRouter": False},
        **extra,
    }
    return AgentProcess(config, workdir, name=name)


@pytest.fixture(scope="module")
def agent(model: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    limits = {"maxQuestionChars": 500}
    workdir = tmp_path_factory.mktemp("a2a")
    with _agent(model.url, workdir, "contracts", limits=limits) as process:
        yield process.url


def _message(text: str) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    return SendMessageRequest(message=message)


async def _card(url: str) -> AgentCard:
    async with httpx.AsyncClient() as http:
        return await A2ACardResolver(http, url).get_agent_card()


def _stream(url: str, question: str) -> list[StreamResponse]:
    async def go() -> list[StreamResponse]:
        client = await create_client(await _card(url), client_config=ClientConfig(streaming=True))
        try:
            return [event async for event in client.send_message(_message(question))]
        finally:
            await client.close()

    return asyncio.run(go())


def test_the_card_names_the_agent_its_tools_and_its_endpoint(agent: str) -> None:
    card = asyncio.run(_card(agent))
    assert card.name == "contracts"
    assert card.capabilities.streaming
    assert {s.id for s in card.skills} == {"sql_query", "vector_search"}
    assert all(s.description for s in card.skills)
    assert [i.url for i in card.supported_interfaces] == [f"{agent}/a2a"]


def test_a_streamed_task_reports_progress_streams_the_answer_and_cites(agent: str) -> None:
    events = _stream(agent, SEED_QUESTION)
    task_id = events[0].task.id
    assert task_id
    working = [
        e.status_update.status.message
        for e in events
        if e.HasField("status_update")
        and e.status_update.status.state == TaskState.TASK_STATE_WORKING
        and e.status_update.status.HasField("message")
    ]
    progress = [get_data_parts(m.parts)[0] for m in working]
    assert [p["kind"] for p in progress if p["kind"] != "model"] == ["tools", "tool"] * 2
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len(chunks) > 5  # the answer came in pieces, then whole
    assert "".join(get_artifact_text(c.artifact) for c in chunks[:-1]) == SEED_ANSWER
    assert chunks[-1].last_chunk
    assert not chunks[-1].append
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED

    async def get() -> Task:
        client = await create_client(await _card(agent))
        try:
            return await client.get_task(GetTaskRequest(id=task_id))
        finally:
            await client.close()

    task = asyncio.run(get())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = task.artifacts
    assert get_artifact_text(artifact, delimiter="") == SEED_ANSWER
    (data,) = get_data_parts(artifact.parts)
    assert [c["id"] for c in data["citations"]] == ["chunk_1", "chunk_2", "chunk_3"]


def test_a_question_over_the_limit_is_refused_naming_the_field(agent: str) -> None:
    with pytest.raises(InvalidParamsError, match=r"message\.parts.*maxQuestionChars"):
        _stream(agent, "x" * 501)


def _iterations(url: str) -> float:
    samples = parse_samples(httpx.get(f"{url}/metrics").text)
    return sum(v for (name, _), v in samples.items() if name == "sleuth_agent_iterations_count")


async def _cancel_while_tool_runs(url: str, tool: str) -> tuple[list[StreamResponse], Task]:
    """Send the question, read the stream until ``tool`` is called, then cancel the task."""
    card = await _card(url)
    client = await create_client(card, client_config=ClientConfig(streaming=True))
    seen: list[StreamResponse] = []
    try:
        async for event in client.send_message(_message(SEED_QUESTION)):
            seen.append(event)
            message = event.status_update.status.message
            if any(p.get("tools") == [tool] for p in get_data_parts(message.parts)):
                break
        canceled = await client.cancel_task(CancelTaskRequest(id=seen[0].task.id))
        return seen, canceled
    finally:
        await client.close()


def test_cancelling_a_task_stops_the_loop(model: ScriptedServer, tmp_path: Path) -> None:
    """A task whose tool takes 30 s is cancelled while the tool runs: the task says canceled,
    the admission slot is free again, and the loop never asks the model for the answer."""
    tools = seed_tools(vector="slow_vector_factory")
    tools[1]["timeoutSeconds"] = "60"
    config = {"maxConcurrentRequests": 1, "requestTimeoutSeconds": 120}
    with _agent(model.url, tmp_path, "cancel", tools=tools, **config) as process:
        model.clear_requests()
        seen, canceled = asyncio.run(_cancel_while_tool_runs(process.url, "vector_search"))
        assert seen[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED

        def slot_free() -> tuple[float | None]:
            samples = parse_samples(httpx.get(f"{process.url}/metrics").text)
            key = ("sleuth_agent_requests_in_flight", frozenset({("agent", "cancel")}))
            assert samples.get(key) == 0.0, samples.get(key)
            return (samples.get(key),)

        eventually(slot_free, timeout=10, what="the cancelled task's slot is released")
        # two model calls (then sql_query, then vector_search), never the one that answers
        assert len(model.requests()) == 2
        # the one slot serves the next task (not rejected as overloaded)
        seen, canceled = asyncio.run(_cancel_while_tool_runs(process.url, "vector_search"))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED


def test_a_task_beyond_max_concurrent_requests_is_rejected(
    model: ScriptedServer, tmp_path: Path
) -> None:
    tools = seed_tools(vector="slow_vector_factory")
    tools[1]["timeoutSeconds"] = "60"
    config = {"maxConcurrentRequests": 1, "requestTimeoutSeconds": 120}
    with _agent(model.url, tmp_path, "full", tools=tools, **config) as process:

        async def go() -> tuple[list[StreamResponse], Task]:
            card = await _card(process.url)
            client = await create_client(card, client_config=ClientConfig(streaming=True))
            try:
                first = client.send_message(_message(SEED_QUESTION))
                opening = await anext(first)  # the first task holds the only slot
                second = [e async for e in client.send_message(_message(SEED_QUESTION))]
                canceled = await client.cancel_task(CancelTaskRequest(id=opening.task.id))
                return second, canceled
            finally:
                await client.close()

        second, canceled = asyncio.run(go())
    final = second[-1]
    state = final.status_update.status.state if final.HasField("status_update") else None
    if state is None:
        state = final.task.status.state
        text = str(final.task.status.message)
    else:
        text = str(final.status_update.status.message)
    assert state == TaskState.TASK_STATE_REJECTED
    assert "maximum of 1 concurrent requests" in text
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED


@pytest.mark.parametrize(
    ("a2a", "status", "url"),
    [
        (
            {"publicUrl": "http://contracts-agent.team-a.svc:8080"},
            200,
            "http://contracts-agent.team-a.svc:8080/a2a",
        ),
        ({"enabled": False}, 404, None),
    ],
)
def test_the_card_names_the_configured_url_or_is_off(
    model: ScriptedServer, a2a: dict[str, Any], status: int, url: str | None
) -> None:
    config = AgentConfig.model_validate(
        {"model": {"endpoint": model.url, "servedModelName": "scripted"}, "a2a": a2a}
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    with serve_app(create_app(config, tools=tools, name="contracts")) as app:
        response = httpx.get(f"{app.url}/.well-known/agent-card.json")
        assert response.status_code == status
        if url is not None:
            assert [i["url"] for i in response.json()["supportedInterfaces"]] == [url]
        assert httpx.post(f"{app.url}/a2a", json={}).status_code == (404 if url is None else 200)


def test_an_oversized_a2a_body_is_refused_before_json_rpc(model: ScriptedServer) -> None:
    """RequestGuard's body limit covers /a2a like the OpenAI API: 413, nothing read past it."""
    config = AgentConfig.model_validate(
        {
            "model": {"endpoint": model.url, "servedModelName": "scripted"},
            "limits": {"maxBodyBytes": 4096},
        }
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    with serve_app(create_app(config, tools=tools, name="contracts")) as app:
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"x": "y" * 8000}}
        response = httpx.post(f"{app.url}/a2a", json=body)
    assert response.status_code == 413
    assert "maxBodyBytes" in response.json()["error"]["message"]
