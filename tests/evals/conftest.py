"""Fixtures for the evals' tests: the scripted judge (the agent's scripted model server), and
the real agent service answering the worked example (``agent_url``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.tools import VECTOR_SEARCH, ToolSpec
from sleuth.evals.data import worked_example_path
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION
from sleuth.scoring.samples import RagSample, load_samples
from sleuth.scripted import (
    EmbeddingScript,
    Scenario,
    ScriptedResponse,
    ScriptedServer,
    ScriptedToolCall,
)
from sleuth.tools.base import Citation, ToolOutput
from tests.evals.evals_judge_script import CHUNKS, WorkedExampleJudge, embedding_vectors
from tests.support.asgi import serve_app


@pytest.fixture
def worked_example() -> RagSample:
    return load_samples(worked_example_path())[0]


@pytest.fixture
def worked_judge(worked_example: RagSample) -> WorkedExampleJudge:
    return WorkedExampleJudge(worked_example.reference or "", worked_example.answer)


@pytest.fixture
def judge_server(worked_judge: WorkedExampleJudge) -> Iterator[ScriptedServer]:
    scenario = Scenario(embeddings=EmbeddingScript(dimensions=4, vectors=embedding_vectors()))
    with ScriptedServer(scenario, responder=worked_judge) as server:
        yield server


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


@pytest.fixture
def agent_url(worked_example: RagSample) -> Iterator[str]:
    """The real agent service (HTTP), its model scripted, vector_search in process."""
    with ScriptedServer(responder=planner(worked_example.question, worked_example.answer)) as model:
        config = AgentConfig.model_validate(
            {"model": {"endpoint": model.url, "servedModelName": "scripted"}}
        )
        app = create_app(config, tools={"vector_search": BoundTool(Chunks())}, name="redis")
        with serve_app(app) as served:
            yield served.url
