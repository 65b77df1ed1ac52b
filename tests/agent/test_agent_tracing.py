"""Traces of agent requests: the agent over real HTTP, the scripted model server over HTTP,
in-process tools, and the spans caught in memory (the SDK's InMemorySpanExporter).

One request is one trace: ``invoke_agent`` at the root, a ``chat`` span per model call whose
``traceparent`` reaches the model server, an ``execute_tool`` span per tool call; the client gets
the trace id in a header and the body, and the request's log line carries it. Tracing off: none
of it, and nothing sent to the model server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_data_parts
from a2a.types import Message, Part, Role, SendMessageRequest
from opentelemetry.trace import SpanKind, StatusCode

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core import spans as names
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.names import TRACE_ID_HEADER
from sleuth.core.process import free_port
from sleuth.core.tracing import Tracing
from sleuth.scripted import Scenario, ScriptedServer
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    SEED_SQL,
    seed_sql,
    seed_tools,
    seed_turns,
    seed_vector,
)
from tests.agent.agent_process import AgentProcess
from tests.agent.tracing_doubles import (
    MemoryTracing,
    attrs,
    hex_span,
    named,
    parent_id,
)
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_PARENT = "b7ad6b7169203331"


@dataclass
class Served:
    url: str
    memory: MemoryTracing | None
    model: ScriptedServer

    def query(self, **headers: str) -> httpx.Response:
        self.model.set_scenario(Scenario(turns=seed_turns()))
        self.model.clear_requests()
        return httpx.post(
            f"{self.url}/v1/query", json={"question": SEED_QUESTION}, headers=headers, timeout=30
        )


def _serve(scripted: ScriptedServer, tracing: Tracing | None) -> Any:
    config = AgentConfig.model_validate(
        {"model": {"endpoint": scripted.url, "servedModelName": "scripted"}}
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    return serve_app(create_app(config, tools=tools, name="contracts", tracing=tracing))


@pytest.fixture
def traced(scripted: ScriptedServer) -> Iterator[Served]:
    memory = MemoryTracing()
    with _serve(scripted, memory.tracing) as app:
        yield Served(app.url, memory, scripted)


@pytest.fixture
def untraced(scripted: ScriptedServer) -> Iterator[Served]:
    with _serve(scripted, None) as app:
        yield Served(app.url, None, scripted)


def test_a_query_is_one_trace_of_model_and_tool_spans(
    traced: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="sleuth.agent")
    response = traced.query()
    assert response.status_code == 200
    body = response.json()
    trace_id = response.headers[TRACE_ID_HEADER]
    assert len(trace_id) == 32
    assert int(trace_id, 16)
    assert trace_id == trace_id.lower()
    assert body["sleuth"] == {"traceId": trace_id}
    assert body["answer"] == SEED_ANSWER

    assert traced.memory is not None
    spans = traced.memory.of_trace(trace_id)
    [root] = named(spans, "invoke_agent")
    assert root.name == "invoke_agent contracts"
    assert root.kind is SpanKind.SERVER
    assert root.parent is None
    a = attrs(root)
    assert a[names.OPERATION] == "invoke_agent"
    assert a[names.AGENT_NAME] == "contracts"
    assert a[names.STOP_REASON] == "answered"
    assert a[names.ITERATIONS] == 2
    assert list(a[names.CITATIONS]) == ["chunk_1", "chunk_2", "chunk_3"]
    assert root.status.status_code is not StatusCode.ERROR

    chats = named(spans, "chat ")
    tools = named(spans, "execute_tool ")
    assert [s.name for s in chats] == ["chat scripted"] * 3
    assert [s.name for s in tools] == ["execute_tool sql_query", "execute_tool vector_search"]
    assert {parent_id(s) for s in chats + tools} == {hex_span(root)}
    assert len(spans) == 6

    chat = attrs(chats[0])
    assert chats[0].kind is SpanKind.CLIENT
    assert chat[names.OPERATION] == "chat"
    assert chat[names.REQUEST_MODEL] == "scripted"
    assert chat[names.INPUT_TOKENS] > 0
    assert chat[names.OUTPUT_TOKENS] > 0
    assert list(chat[names.FINISH_REASONS]) == ["tool_calls"]
    assert chat[names.TTFT_MS] > 0
    assert list(attrs(chats[2])[names.FINISH_REASONS]) == ["stop"]

    sql = attrs(tools[0])
    assert sql[names.OPERATION] == "execute_tool"
    assert sql[names.TOOL_NAME] == "sql_query"
    assert sql[names.TOOL_CALL_ID] == body["trace"]["steps"][1]["calls"][0]["id"]
    assert sql[names.TOOL_STATUS] == "ok"
    assert sql[names.TOOL_CACHE_HIT] is False
    assert list(attrs(tools[1])[names.CITATIONS]) == ["chunk_1", "chunk_2", "chunk_3"]
    # content capture is off: no prompt, completion, arguments or results on any span
    for span in spans:
        assert not {names.INPUT_MESSAGES, names.OUTPUT_MESSAGES, names.TOOL_ARGUMENTS} & set(
            attrs(span)
        ), span.name

    # the model server received each chat span as the parent of its request (sampled)
    received = [p.split("-") for p in traced.model.traceparents() if p is not None]
    assert [(v, t, s) for v, t, s, _ in received] == [("00", trace_id, hex_span(c)) for c in chats]
    assert all(int(flags, 16) & 1 for *_, flags in received)
    # one log line for the request, with its trace id
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("request ")]
    assert len(lines) == 1, lines
    assert lines[0].endswith(f"trace_id={trace_id}"), lines
    assert "endpoint=query stop=answered iterations=2 tool_calls=2" in lines[0]


def test_the_clients_traceparent_is_continued(traced: Served) -> None:
    response = traced.query(traceparent=f"00-{CLIENT_TRACE}-{CLIENT_PARENT}-01")
    assert response.headers[TRACE_ID_HEADER] == CLIENT_TRACE
    assert traced.memory is not None
    [root] = named(traced.memory.of_trace(CLIENT_TRACE), "invoke_agent")
    assert parent_id(root) == CLIENT_PARENT
    # a client that does not sample: the agent records nothing and gives out no id
    unsampled = traced.query(traceparent=f"00-{'1' * 32}-{CLIENT_PARENT}-00")
    assert unsampled.status_code == 200
    assert TRACE_ID_HEADER not in unsampled.headers
    assert "sleuth" not in unsampled.json()
    assert traced.memory.of_trace("1" * 32) == []


def test_chat_completions_give_the_trace_id_streamed_or_not(traced: Served) -> None:
    traced.model.set_scenario(Scenario(turns=seed_turns()))
    body = {"messages": [{"role": "user", "content": SEED_QUESTION}]}
    response = httpx.post(f"{traced.url}/v1/chat/completions", json=body, timeout=30)
    trace_id = response.headers[TRACE_ID_HEADER]
    assert response.json()["sleuth"]["traceId"] == trace_id

    traced.model.set_scenario(Scenario(turns=seed_turns()))
    chunks: list[dict[str, Any]] = []
    with httpx.stream(
        "POST", f"{traced.url}/v1/chat/completions", json={**body, "stream": True}, timeout=30
    ) as streamed:
        streamed_id = streamed.headers[TRACE_ID_HEADER]
        for line in streamed.iter_lines():
            if line.startswith("data: {"):
                chunks.append(json.loads(line[6:]))
    assert streamed_id != trace_id
    [final] = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] == "stop"]
    assert final["sleuth"]["traceId"] == streamed_id
    assert traced.memory is not None
    for tid in (trace_id, streamed_id):
        [root] = named(traced.memory.of_trace(tid), "invoke_agent")
        assert attrs(root)[names.ENDPOINT] == "chat_completions"
        assert attrs(root)[names.STOP_REASON] == "answered"
        assert len(named(traced.memory.of_trace(tid), "chat ")) == 3


def test_content_is_captured_only_when_asked(scripted: ScriptedServer) -> None:
    memory = MemoryTracing(capture_content=True)
    with _serve(scripted, memory.tracing) as app:
        response = Served(app.url, memory, scripted).query()
    spans = memory.of_trace(response.headers[TRACE_ID_HEADER])
    [root] = named(spans, "invoke_agent")
    assert SEED_QUESTION in attrs(root)[names.INPUT_MESSAGES]
    assert SEED_ANSWER in attrs(root)[names.OUTPUT_MESSAGES]
    first_chat = named(spans, "chat ")[0]
    assert SEED_QUESTION in attrs(first_chat)[names.INPUT_MESSAGES]
    assert "sql_query" in attrs(first_chat)[names.OUTPUT_MESSAGES]
    sql = attrs(named(spans, "execute_tool sql_query")[0])
    assert json.loads(sql[names.TOOL_ARGUMENTS]) == SEED_SQL
    assert "8300000" in sql[names.TOOL_RESULT]


def test_tracing_off_adds_nothing(untraced: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sleuth.agent")
    response = untraced.query()
    assert response.status_code == 200
    assert TRACE_ID_HEADER not in response.headers
    assert set(response.json()) == {"answer", "citations", "trace"}
    assert untraced.model.traceparents() == [None, None, None]
    untraced.model.set_scenario(Scenario(turns=seed_turns()))
    chat = httpx.post(
        f"{untraced.url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": SEED_QUESTION}]},
        timeout=30,
    )
    assert TRACE_ID_HEADER not in chat.headers
    assert "traceId" not in chat.json()["sleuth"]
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("request ")]
    assert len(lines) == 2, lines
    assert not any("trace_id" in line for line in lines), lines


def test_a_collector_that_is_down_leaves_requests_alone(
    scripted: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sleuth agent`` with traces on and nothing listening at the endpoint: every request is
    answered (with its trace id), and the spans that could not wait are counted on /metrics."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "4")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "30000")  # the exporter retries for 30 s
    config = {
        "model": {"endpoint": scripted.url, "servedModelName": "scripted"},
        "tools": seed_tools(),
    }
    with AgentProcess(config, tmp_path, name="orphan") as agent:
        for _ in range(3):
            scripted.set_scenario(Scenario(turns=seed_turns()))
            answered = agent.ask(SEED_QUESTION)
            assert answered.status_code == 200
            assert answered.json()["answer"] == SEED_ANSWER
            assert answered.headers[TRACE_ID_HEADER] == answered.json()["sleuth"]["traceId"]
        # 3 requests of 6 spans; at most 4 wait in the queue and 4 in the stuck export, so at
        # least 10 are dropped — and never more than the 18 made (how many the export thread
        # took before the queue filled depends on when it woke: 16 were seen under CI load)
        dropped = agent.wait_for(
            "sleuth_trace_spans_dropped_total", 10, agent="orphan", reason="queue_full"
        )
        assert dropped <= 18


def test_an_a2a_task_is_one_trace_whose_id_is_in_the_answer(traced: Served) -> None:
    traced.model.set_scenario(Scenario(turns=seed_turns()))

    async def ask() -> list[Any]:
        async with httpx.AsyncClient() as http:
            card = await A2ACardResolver(http, traced.url).get_agent_card()
        client = await create_client(card, client_config=ClientConfig(streaming=True))
        message = Message(
            role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=SEED_QUESTION)]
        )
        try:
            return [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()

    events = asyncio.run(ask())
    last = [e.artifact_update for e in events if e.HasField("artifact_update")][-1]
    (data,) = get_data_parts(last.artifact.parts)
    trace_id = data["traceId"]
    assert traced.memory is not None
    spans = traced.memory.of_trace(trace_id)
    [root] = named(spans, "invoke_agent")
    assert attrs(root)[names.ENDPOINT] == "a2a"
    assert attrs(root)[names.STOP_REASON] == "answered"
    assert len(named(spans, "chat ")) == 3
    assert len(named(spans, "execute_tool ")) == 2
