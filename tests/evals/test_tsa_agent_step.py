"""`sleuth eval tsa --agent-url`: TSA on a team's own cases with the agent's own first step.

Real processes over real HTTP: the agent service (`sleuth agent`) configured as a team would
configure it — its own tool names and descriptions, its own system prompt, guided tool calling,
API-key callers — a scripted model server standing in for vLLM, and `sleuth eval tsa` as a
process. The model picks tools by their *descriptions*, so only a run that offers the agent's
own tools and descriptions can score; and the TSA request carries exactly the system prompt and
tools of the agent's own first model call of a real question.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.agent.access_kit import key_directory, new_key
from tests.agent.agent_process import AgentProcess
from tests.support.paths import SLEUTH

pytestmark = pytest.mark.integration

PROMPT = "You are Acme's support agent. Count tickets with the ticket tool; read the handbook."
TOOLS = [
    {
        "name": "tickets",
        "type": "sql_query",
        # No service answers there: the agent falls back to the type's schema, with this text.
        "endpoint": "http://127.0.0.1:9",
        "description": "Count and sum Acme support tickets by queue, status and month.",
    },
    {
        "name": "handbook",
        "type": "vector_search",
        "endpoint": "http://127.0.0.1:9",
        "description": "Search the Acme support handbook: procedures, escalation, policies.",
    },
]
CASES = [
    {"id": "t1", "query": "How many tickets were opened in March?", "split": "test",
     "expected": [{"name": "tickets", "arguments": {}}]},
    {"id": "h1", "query": "What does the escalation procedure say?", "split": "test",
     "expected": [{"name": "handbook", "arguments": {}}]},
    {"id": "h2", "query": "Which policy covers refunds?", "split": "test",
     "expected": [{"name": "handbook", "arguments": {}}]},
]  # fmt: skip


def _by_description(body: dict[str, Any]) -> ScriptedResponse:
    """A model that reads the tool descriptions: a counting question goes to the tool described
    as counting tickets, any other to the one described as the handbook; no such tool, no call.
    (The scripted server writes the turn in the guided form when the request asks for it.)"""
    if any(m["role"] == "tool" for m in body["messages"]):
        return ScriptedResponse(content="done")
    question = body["messages"][-1]["content"]
    want = "Count" if "how many" in question.lower() else "handbook"
    for tool in body.get("tools", []):
        function = tool["function"]
        if want in function["description"]:
            call = ScriptedToolCall(name=function["name"], arguments={"query": question})
            return ScriptedResponse(tool_calls=[call])
    return ScriptedResponse(content="no tool fits")


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(responder=_by_description) as server:
        yield server


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, str]:
    keys = {"eval": new_key(), "portal": new_key()}
    for caller, key in keys.items():
        key_directory(tmp_path / "keys", caller, key)
    return keys


@pytest.fixture
def agent(model: ScriptedServer, keys: dict[str, str], tmp_path: Path) -> Iterator[AgentProcess]:
    access = {
        "callers": [
            {
                "name": "eval",
                "apiKeyDirectory": str(tmp_path / "keys" / "eval"),
                "grants": ["evaluation"],
            },
            {"name": "portal", "apiKeyDirectory": str(tmp_path / "keys" / "portal")},
        ]
    }
    config = {
        "model": {
            "endpoint": model.url,
            "servedModelName": "acme-llm",
            "toolCalling": "guided",
            "guidedFormat": "json_object",
        },
        "tools": TOOLS,
        "systemPrompt": PROMPT,
        "parallelToolCalls": False,
        "planner": {"fallbackToRouter": False},
        "access": access,
    }
    with AgentProcess(config, tmp_path, name="acme") as running:
        yield running


def _tsa(
    cases: Path, out: Path, model: ScriptedServer, *extra: str
) -> subprocess.CompletedProcess[str]:
    args = [str(SLEUTH), "eval", "tsa", "--cases", str(cases), "--endpoint", model.url]
    args += ["--model", "acme-llm", "--split", "test", "--final-report", "--no-progress"]
    args += ["--out", str(out), "--timeout", "20", *extra]
    return subprocess.run(args, capture_output=True, text=True, timeout=180, check=False)


def _first_call(bodies: list[dict[str, Any]], question: str) -> dict[str, Any]:
    asked = [b for b in bodies if b["messages"][-1]["content"] == question]
    return asked[0]


def test_tsa_scores_the_agents_own_tools_and_prompt(
    agent: AgentProcess, model: ScriptedServer, keys: dict[str, str], tmp_path: Path
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")

    # The agent answers a real question: its first model call is the reference.
    question = CASES[0]["query"]
    reply = httpx.post(
        f"{agent.url}/v1/query",
        json={"question": question},
        headers={"Authorization": f"Bearer {keys['portal']}"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    agents_call = _first_call(model.requests(), question)

    # With the agent's first step, every case is scored against the team's tools.
    own = _tsa(
        cases, tmp_path / "own.json", model,
        "--agent-url", agent.url, f"--agent-api-key={keys['eval']}",
    )  # fmt: skip
    assert own.returncode == 0, own.stdout + own.stderr
    doc = json.loads((tmp_path / "own.json").read_text(encoding="utf-8"))
    assert doc["metrics"]["tool_selection_accuracy"]["value"] == 1.0
    assert doc["config"]["tools"] == ["tickets", "handbook"]  # in the agent's order
    assert doc["config"]["client"] == "agent"
    evals_call = [b for b in model.requests() if b["messages"][-1]["content"] == question][-1]
    # Exactly the agent's first step: the system prompt, the tools (in the guided schema), the
    # options of its model client.
    assert evals_call["messages"] == agents_call["messages"]
    assert evals_call["messages"][0]["content"] == PROMPT
    assert evals_call["response_format"] == agents_call["response_format"]
    assert evals_call.get("tools") == agents_call.get("tools")

    # Sleuth's defaults (the sample's tool names and descriptions) score nothing here.
    default = _tsa(cases, tmp_path / "default.json", model, "--agent-client")
    assert default.returncode == 1, default.stdout + default.stderr  # the gate failed
    doc = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert doc["metrics"]["tool_selection_accuracy"]["value"] == 0.0


def test_the_first_step_is_served_only_to_callers_granted_evaluation(
    agent: AgentProcess, model: ScriptedServer, keys: dict[str, str], tmp_path: Path
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    refused = _tsa(
        cases, tmp_path / "r.json", model,
        "--agent-url", agent.url, f"--agent-api-key={keys['portal']}",
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "HTTP 403" in refused.stderr, refused.stderr
    assert "'evaluation'" in refused.stderr, refused.stderr
    assert keys["portal"] not in refused.stdout + refused.stderr
    anonymous = httpx.get(f"{agent.url}/v1/eval/first-step", timeout=10)
    assert anonymous.status_code == 401
    conflicting = _tsa(
        cases, tmp_path / "c.json", model,
        "--agent-url", agent.url, f"--agent-api-key={keys['eval']}",
        "--descriptions", str(cases),
    )  # fmt: skip
    assert conflicting.returncode == 2
    assert "--descriptions: --agent-url reads the agent's own" in conflicting.stderr
