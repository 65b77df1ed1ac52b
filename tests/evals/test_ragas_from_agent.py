"""A scheduled RAGAS run end to end: golden questions → the real agent over HTTP (scripted model,
in-process tool) → the scripted judge → scores, failures and skips in the result."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from evals_judge_script import CHUNKS

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.agent.tools.base import Citation, ToolOutput
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.cli import main
from sleuth.core.jsonl import dump_jsonl
from sleuth.core.tools import VECTOR_SEARCH, ToolSpec
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION, GoldenCase
from sleuth.evals.golden.manifest import freeze
from sleuth.scoring.samples import RagSample
from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall

pytestmark = pytest.mark.integration

ADVERSARIAL = "Why did Redis remove in-memory storage in version 7?"


class Chunks:
    """vector_search returning the worked example's five chunks, with citations."""

    @property
    def spec(self) -> ToolSpec:
        return VECTOR_SEARCH

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            content=[{"id": cid, "text": text} for cid, text in CHUNKS.items()],
            citations=tuple(
                Citation(id=cid, source="redis.md", text=t) for cid, t in CHUNKS.items()
            ),
        )


def planner(question: str, answer: str) -> Any:
    def respond(body: dict[str, Any]) -> ScriptedResponse:
        messages = body["messages"]
        asked = next(m["content"] for m in messages if m["role"] == "user")
        if asked != question:
            return ScriptedResponse(content=NOT_ENOUGH_INFORMATION)
        if not any(m["role"] == "tool" for m in messages):
            return ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(name="vector_search", arguments={"query": "Redis GET latency"})
                ]
            )
        return ScriptedResponse(content=answer)

    return respond


class Served:
    def __init__(self, app: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[self._sock])), daemon=True
        )

    def __enter__(self) -> Served:
        self._thread.start()
        while not self._server.started:
            assert self._thread.is_alive(), "agent app did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@pytest.fixture
def agent_url(worked_example: RagSample) -> Iterator[str]:
    with ScriptedServer(responder=planner(worked_example.question, worked_example.answer)) as model:
        config = AgentConfig.model_validate(
            {"model": {"endpoint": model.url, "servedModelName": "scripted"}}
        )
        app = create_app(config, tools={"vector_search": BoundTool(Chunks())}, name="redis")
        with Served(app) as served:
            yield served.url


def test_golden_questions_through_the_agent(
    agent_url: str, judge_server: ScriptedServer, worked_example: RagSample, tmp_path: Path
) -> None:
    cases = [
        GoldenCase(
            id="redis",
            question=worked_example.question,
            reference=worked_example.reference or "",
            stratum="easy",
            split="test",
        ),
        GoldenCase(
            id="false-premise",
            question=ADVERSARIAL,
            reference=NOT_ENOUGH_INFORMATION,
            stratum="adversarial",
            split="test",
        ),
        GoldenCase(
            id="too-long", question="x" * 20001, reference="-", stratum="easy", split="test"
        ),
    ]
    golden = tmp_path / "golden.jsonl"
    dump_jsonl(cases, golden)
    freeze(cases, golden)
    out, record = tmp_path / "r.json", tmp_path / "runs.jsonl"
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(golden),
            "--agent-url",
            agent_url,
            "--split",
            "test",
            "--final-report",
            "--judge-url",
            judge_server.url,
            "--judge-model",
            "judge",
            "--metrics",
            "faithfulness,context_recall",
            "--out",
            str(out),
            "--record",
            str(record),
            "--no-progress",
        ]
    )
    doc = json.loads(out.read_text())
    # the worked example's answer, retrieved through the agent's real loop and tool
    assert doc["metrics"]["faithfulness"]["value"] == 0.75
    assert doc["metrics"]["context_recall"]["value"] == 1.0
    assert doc["metrics"]["faithfulness"]["rows"] == 1
    # the agent refused the 20001-character question: counted, and it fails the gate
    assert [(f["row_id"], f["metric"], f["reason"]) for f in doc["failures"]] == [
        ("too-long", "agent", "agent_http_422")
    ]
    # the adversarial refusal retrieved nothing: skipped, not failed
    assert {(s["row_id"], s["reason"]) for s in doc["skipped"]} == {
        ("false-premise", "no_contexts")
    }
    assert code == 1
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["id"] for r in runs] == ["redis", "false-premise"]
    assert runs[0]["answer"] == worked_example.answer
