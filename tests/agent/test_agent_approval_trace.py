"""Approval decisions in the trace: the agent over real HTTP (its spans caught in memory), the
scripted model server; the leg that pauses is no failure, the leg that decides carries the
decision as a ``sleuth.approval`` event on its ``invoke_agent`` span."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.trace import StatusCode

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core import spans as names
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import ScriptedServer
from tests.agent.agent_doubles import seed_sql
from tests.agent.approval_kit import ANSWER_WITH_WEB, QUESTION, scenario, web_factory
from tests.agent.tracing_doubles import MemoryTracing, attrs, named
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(scenario()) as server:
        yield server


def test_the_decision_is_an_event_of_the_deciding_request_span(model: ScriptedServer) -> None:
    config = AgentConfig.model_validate(
        {
            "model": {"endpoint": model.url, "servedModelName": "scripted"},
            "planner": {"fallbackToRouter": False},
            "tools": [
                {"name": "sql_query", "type": "custom", "factory": "x.y:z"},
                {
                    "name": "web_search",
                    "type": "custom",
                    "factory": "x.y:z",
                    "approval": {"required": "always"},
                },
            ],
        }
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), web_factory(None))}
    memory = MemoryTracing()
    app = create_app(config, tools=tools, name="contracts", tracing=memory.tracing)
    with serve_app(app) as served:  # no access: the local caller, who holds every grant
        paused = httpx.post(f"{served.url}/v1/query", json={"question": QUESTION}, timeout=30)
        approval = paused.json()["approval"]
        assert approval["calls"][0]["why"] == "every call of this tool is approved by a person"
        decided = httpx.post(
            f"{served.url}/v1/query", json={"question": approval["approve"]}, timeout=30
        )
    assert decided.json()["answer"] == ANSWER_WITH_WEB
    first, second = named(memory.spans(), names.INVOKE_AGENT)
    assert attrs(first)[names.STOP_REASON] == "awaiting_approval"
    assert first.status.status_code != StatusCode.ERROR
    assert not first.events
    (event,) = [e for e in second.events if e.name == "sleuth.approval"]
    shown = dict(event.attributes or {})
    assert shown["sleuth.approval.id"] == approval["id"]
    assert shown["sleuth.approval.decision"] == "approved"
    assert shown["sleuth.approval.by"] == "local"
    assert list(shown["sleuth.approval.tools"]) == ["web_search"]
    tools_run = [attrs(s)[names.TOOL_NAME] for s in named(memory.spans(), names.EXECUTE_TOOL)]
    assert tools_run == ["sql_query", "web_search"]  # the search ran once, after the approval
    assert attrs(second)[names.STOP_REASON] == "answered"
