"""Token streaming of the answer through ``/v1/chat/completions``, against ``sleuth agent`` as a
process and the scripted model server streaming the final answer token by token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from sleuth.agent.events import AnswerStream, AnswerText, Progress, RunEvent
from sleuth.scripted import (
    LatencyProfile,
    Scenario,
    ScriptedResponse,
    ScriptedServer,
    ScriptedToolCall,
)
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    make_agent,
    seed_sql,
    seed_tools,
    seed_turns,
)
from tests.agent.agent_process import AgentProcess
from tests.support.metrics import parse_samples

pytestmark = pytest.mark.integration

# 50 ms per token: the final answer (about 50 tokens) takes the model server ~2.5 s to stream.
SLOW_TOKENS = LatencyProfile(per_token_ms=50.0)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(Scenario(turns=seed_turns(), latency=SLOW_TOKENS)) as server:
        yield server


def _agent(model_url: str, workdir: Path, name: str, **extra: Any) -> AgentProcess:
    config = {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "tools": seed_tools(),
        **extra,
    }
    return AgentProcess(config, workdir, name=name)


@pytest.fixture(scope="module")
def agent(model: ScriptedServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _agent(model.url, tmp_path_factory.mktemp("stream"), "contracts") as process:
        yield process.url


def _answered_runs(url: str) -> float:
    """Runs the agent has finished (its loop over, the trace recorded)."""
    samples = parse_samples(httpx.get(f"{url}/metrics").text)
    return sum(v for (name, _), v in samples.items() if name == "sleuth_agent_iterations_count")


def test_openai_sdk_streams_the_answer_before_the_loop_ends(agent: str) -> None:
    """The official SDK's iterator gets the answer in many chunks, the first while the loop is
    still running (no run recorded yet), and the text is the non-streamed answer."""
    client = openai.OpenAI(base_url=f"{agent}/v1", api_key="unused", max_retries=0)
    before = _answered_runs(agent)
    stream = client.chat.completions.create(
        model="contracts",
        messages=[{"role": "user", "content": SEED_QUESTION}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    runs_at_first_piece = None
    last: Any = None
    for chunk in stream:
        last = chunk
        if chunk.choices and chunk.choices[0].delta.content:
            if not pieces:
                runs_at_first_piece = _answered_runs(agent)
            pieces.append(chunk.choices[0].delta.content)
    assert "".join(pieces) == SEED_ANSWER
    assert len(pieces) >= 10, pieces
    assert runs_at_first_piece == before  # the first token came while the loop was running
    assert _answered_runs(agent) == before + 1
    assert last is not None
    assert last.usage is not None
    assert last.usage.completion_tokens > 0


def test_progress_goes_out_as_sse_comments_before_the_answer(agent: str) -> None:
    body = {"messages": [{"role": "user", "content": SEED_QUESTION}], "stream": True}
    progress: list[dict[str, Any]] = []
    content: list[str] = []
    finish: dict[str, Any] = {}
    with httpx.stream("POST", f"{agent}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith(": sleuth "):
                assert not content, "progress of the tools came after the answer began"
                progress.append(json.loads(line.removeprefix(": sleuth ")))
            elif line.startswith("data: {"):
                chunk = json.loads(line.removeprefix("data: "))
                choice = chunk["choices"][0]
                if choice["delta"].get("content"):
                    content.append(choice["delta"]["content"])
                if choice["finish_reason"] == "stop":
                    finish = chunk
    kinds = [(p["kind"], p.get("tool") or p.get("tools")) for p in progress]
    assert kinds == [
        ("model", None),
        ("tools", ["sql_query"]),
        ("tool", "sql_query"),
        ("model", None),
        ("tools", ["vector_search"]),
        ("tool", "vector_search"),
        ("model", None),
    ]
    assert progress[2]["status"] in ("ok", "cached")  # the module's agent may have cached it
    assert "".join(content) == SEED_ANSWER
    assert [c["id"] for c in finish["sleuth"]["citations"]] == ["chunk_1", "chunk_2", "chunk_3"]


def test_router_path_streams_progress_and_its_answer(model: ScriptedServer, tmp_path: Path) -> None:
    """The router (no model) streams too: tool progress, then its answer, equal to the
    non-streamed one."""
    with _agent(model.url, tmp_path, "routed", planner={"mode": "router"}) as process:
        plain = httpx.post(
            f"{process.url}/v1/query", json={"question": SEED_QUESTION}, timeout=60
        ).json()
        client = openai.OpenAI(base_url=f"{process.url}/v1", api_key="unused", max_retries=0)
        stream = client.chat.completions.create(
            model="routed", messages=[{"role": "user", "content": SEED_QUESTION}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        with httpx.stream(
            "POST",
            f"{process.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": SEED_QUESTION}], "stream": True},
            timeout=60,
        ) as response:
            lines = [line for line in response.iter_lines() if line.startswith(": sleuth ")]
    assert text == plain["answer"]
    assert text
    tools = [json.loads(line.removeprefix(": sleuth ")) for line in lines]
    assert any(t["kind"] == "tool" and t["status"] in ("ok", "cached") for t in tools), tools


async def test_the_loop_streams_a_forced_answer_and_reports_each_step(
    scripted: ScriptedServer,
) -> None:
    """The loop with a stream, over the scripted server: a repeated call is not run again, the
    model's forced answer streams in pieces, and the stream ends with exactly the answer."""
    again = ScriptedResponse(
        tool_calls=[ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"})]
    )
    answer = "In 2025 you signed 47 contracts with EU providers above 100,000 euros."
    scripted.set_scenario(Scenario(turns=[again, again, ScriptedResponse(content=answer)]))
    events: list[RunEvent] = []
    stream = AnswerStream(events.append)
    result = await make_agent(scripted.url, [seed_sql()]).run("q", stream=stream)
    stream.finish(result.answer)
    assert result.trace.forced_answer
    assert "".join(e.text for e in events if isinstance(e, AnswerText)) == answer
    assert sum(isinstance(e, AnswerText) for e in events) > 3
    steps = [(e.kind, e.data.get("tool")) for e in events if isinstance(e, Progress)]
    assert steps == [
        ("model", None),
        ("tools", None),
        ("tool", "sql_query"),
        ("model", None),
        ("model", None),
    ]
