"""A request that finds the model server asleep (scaled to zero: nothing listens) waits for it,
counted in sleuth_agent_requests_waiting_for_model (the series that wakes it), and is answered
by the model once it is up; when it does not wake within spec.model.autoscaling.wakeWaitSeconds
the router answers and says so. Never a 5xx. Real processes: ``sleuth agent`` and
``sleuth scripted-model``, over real HTTP."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.core.names import AGENT_WAITING_FOR_MODEL
from sleuth.core.process import free_port
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse
from tests.agent.agent_process import AgentProcess

pytestmark = pytest.mark.integration

AWAKE = "answered by the model server, awake again"


def _config(model_port: int, wake_wait_seconds: int) -> dict[str, Any]:
    return {
        "model": {
            "endpoint": f"http://127.0.0.1:{model_port}/v1",
            "servedModelName": "scripted",
            "wakeWaitSeconds": wake_wait_seconds,
        },
        "requestTimeoutSeconds": 60,
    }


def test_a_request_waits_for_the_sleeping_model_server_and_its_answer(tmp_path: Path) -> None:
    port = free_port()  # the model server's Service with no endpoint: refused
    scenario = Scenario(fallback=ScriptedResponse(content=AWAKE))
    with AgentProcess(_config(port, 40), tmp_path, name="waker") as agent:
        answers: list[httpx.Response] = []
        asking = threading.Thread(target=lambda: answers.append(agent.ask("what changed?")))
        asking.start()
        # The wake signal: the request waits, counted where the ScaledObject's trigger reads.
        agent.wait_for(AGENT_WAITING_FOR_MODEL, 1, timeout_s=20, agent="waker")
        assert not answers, "the request did not wait for the model server"
        with ScriptedProcess(scenario, port):
            asking.join(60)
            assert not asking.is_alive()
        (response,) = answers
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"] == AWAKE
        assert body["trace"]["degraded"] is False
        assert body["trace"]["stopReason"] == "answered"


def test_a_model_server_that_does_not_wake_in_time_gets_the_router_s_answer(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing ever listens there
    with AgentProcess(_config(port, 1), tmp_path, name="sleeper") as agent:
        response = agent.ask("what changed?")
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["answer"].startswith(
            "The model server is unavailable (model server asleep (scaled to zero): not awake "
            "after 1 s)"
        )
        assert "deterministic router" in body["answer"]
        assert body["trace"]["degraded"] is True
        # It gave up, but still counts as wanting the model for a while: Prometheus, scraping
        # every 15 s, sees it, and KEDA wakes the server for the next request.
        assert agent.value(AGENT_WAITING_FOR_MODEL, agent="sleeper") == 1.0
        # One wait per request: the loop does not retry what the wait already retried.
        steps = [s for s in body["trace"]["steps"] if s.get("error")]
        assert len(steps) == 1, steps
