"""`sleuth eval tsa --agent-url` against a model server asleep at zero replicas.

The scheduled TSA sends its cases straight to the agent's model server, and nothing it sends
there can wake a server with no endpoint (its ScaledObject activates on the agent's
sleuth_agent_requests_waiting_for_model). So the eval first asks the agent to wake it
(POST /v1/eval/wake). Real processes over real HTTP: `sleuth agent`, `sleuth eval tsa`, and the
scripted model server started on the agent's model port only once the agent says it waits.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.core.names import AGENT_WAITING_FOR_MODEL
from sleuth.core.process import free_port
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse, ScriptedToolCall
from tests.agent.access_kit import key_directory, new_key
from tests.agent.agent_process import AgentProcess
from tests.support.paths import SLEUTH

pytestmark = pytest.mark.integration

CASE = {
    "id": "t1", "query": "How many tickets were opened in March?", "split": "test",
    "expected": [{"name": "tickets", "arguments": {}}],
}  # fmt: skip
TICKETS = ScriptedToolCall(name="tickets", arguments={"query": "SELECT count(*) FROM tickets"})


def _agent_config(model_port: int, keys: Path, wake_wait_seconds: int) -> dict[str, Any]:
    return {
        "model": {
            "endpoint": f"http://127.0.0.1:{model_port}/v1",
            "servedModelName": "acme-llm",
            "wakeWaitSeconds": wake_wait_seconds,
        },
        "requestTimeoutSeconds": 90,
        "tools": [
            {
                "name": "tickets",
                "type": "sql_query",
                "endpoint": "http://127.0.0.1:9",  # not served: the type's schema is offered
                "description": "Count Acme support tickets by queue, status and month.",
            }
        ],
        "access": {
            "callers": [
                {"name": "eval", "apiKeyDirectory": str(keys / "eval"), "grants": ["evaluation"]},
                {"name": "portal", "apiKeyDirectory": str(keys / "portal")},
            ]
        },
    }


def _keys(tmp_path: Path) -> dict[str, str]:
    keys = {"eval": new_key(), "portal": new_key()}
    for caller, key in keys.items():
        key_directory(tmp_path / "keys", caller, key)
    return keys


def _tsa_args(tmp_path: Path, agent: AgentProcess, model_port: int, key: str) -> list[str]:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(CASE) + "\n", encoding="utf-8")
    args = [str(SLEUTH), "eval", "tsa", "--cases", str(cases), "--split", "test"]
    args += ["--endpoint", f"http://127.0.0.1:{model_port}/v1", "--model", "acme-llm"]
    args += ["--agent-url", agent.url, f"--agent-api-key={key}", "--timeout", "20"]
    return [*args, "--final-report", "--no-progress", "--out", str(tmp_path / "tsa.json")]


def test_the_eval_has_the_agent_wake_its_sleeping_model_before_the_cases(tmp_path: Path) -> None:
    port = free_port()  # the model server's Service with no endpoint: refused
    keys = _keys(tmp_path)
    with AgentProcess(_agent_config(port, tmp_path / "keys", 60), tmp_path, name="acme") as agent:
        tsa = subprocess.Popen(
            _tsa_args(tmp_path, agent, port, keys["eval"]),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # The wake signal the ScaledObject reads: the agent waits on the eval's behalf.
            agent.wait_for(AGENT_WAITING_FOR_MODEL, 1, timeout_s=60, agent="acme")
            assert tsa.poll() is None, "the eval did not wait for the model server"
            with ScriptedProcess(Scenario(fallback=ScriptedResponse(tool_calls=[TICKETS])), port):
                out, err = tsa.communicate(timeout=120)
        finally:
            if tsa.poll() is None:
                tsa.kill()
                tsa.communicate()
    assert tsa.returncode == 0, out + err
    doc = json.loads((tmp_path / "tsa.json").read_text(encoding="utf-8"))
    assert doc["metrics"]["tool_selection_accuracy"]["value"] == 1.0
    assert doc["config"]["model_wake_seconds"] > 0
    assert keys["eval"] not in out + err


def test_a_model_that_does_not_wake_fails_the_eval_with_the_reason(tmp_path: Path) -> None:
    port = free_port()  # nothing ever listens there
    keys = _keys(tmp_path)
    with AgentProcess(_agent_config(port, tmp_path / "keys", 1), tmp_path, name="acme") as agent:
        wake = f"{agent.url}/v1/eval/wake"
        portal = {"Authorization": f"Bearer {keys['portal']}"}
        assert httpx.post(wake, headers=portal, timeout=10).status_code == 403
        assert httpx.post(wake, timeout=10).status_code == 401
        tsa = subprocess.run(
            _tsa_args(tmp_path, agent, port, keys["eval"]),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert tsa.returncode == 2, tsa.stdout + tsa.stderr
    assert "/v1/eval/wake: HTTP 503" in tsa.stderr, tsa.stderr
    assert "not awake after 1 s" in tsa.stderr, tsa.stderr
    assert keys["eval"] not in tsa.stdout + tsa.stderr
