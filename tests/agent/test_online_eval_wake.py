"""Online scoring wakes a sleeping judge as a request wakes a sleeping model server: the default
judge is the agent's own model server, which may be scaled to zero (``wakeWaitSeconds`` set).

The agent answers through its router here (``planner.mode: router``), so the only calls to the
model server are the judge's (the router retrieves nothing for this question: answer relevancy is
the metric scored, faithfulness is skipped for want of contexts). A sampled answer finds the
judge asleep (nothing listens on its port), is counted in
``sleuth_agent_requests_waiting_for_model`` (the series its ScaledObject wakes on), waits up to
the same bound, and is scored once the server is up — or, when it does not wake in time, skipped
(``reason="model_asleep"``), never counted as a judge error. Real processes over real HTTP:
``sleuth agent`` and ``sleuth scripted-model``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sleuth.core.names import AGENT_WAITING_FOR_MODEL
from sleuth.core.process import free_port
from sleuth.scripted import ScriptedProcess
from tests.agent.agent_process import AgentProcess
from tests.agent.test_online_eval import QUESTION, scenario

pytestmark = pytest.mark.integration

SCORED = "sleuth_agent_online_eval_scored_total"
SKIPPED = "sleuth_agent_online_eval_skipped_total"
ERRORS = "sleuth_agent_online_eval_errors_total"


def _config(model_port: int, wake_wait_seconds: int) -> dict[str, Any]:
    return {
        "model": {
            "endpoint": f"http://127.0.0.1:{model_port}/v1",
            "servedModelName": "scripted",
            "wakeWaitSeconds": wake_wait_seconds,
        },
        "planner": {"mode": "router"},
        "requestTimeoutSeconds": 60,
        "toolCacheTTLSeconds": 0,
        "tools": [
            {
                "name": "sql_query",
                "type": "custom",
                "factory": "tests.agent.agent_doubles:seed_sql_factory",
            }
        ],
        "onlineEval": {"sampleRate": 1.0, "concurrency": 1, "timeoutSeconds": 20},
    }


def _answered(agent: AgentProcess) -> None:
    response = agent.ask(QUESTION)
    assert response.status_code == 200, response.text
    assert "Answered by the router" in response.json()["answer"]


def test_a_sampled_answer_wakes_the_sleeping_judge_and_is_scored(tmp_path: Path) -> None:
    port = free_port()  # the model server's Service with no endpoint: refused
    with AgentProcess(_config(port, 40), tmp_path, name="scorer") as agent:
        _answered(agent)
        # The judge's call found it asleep: counted where the ScaledObject's trigger reads.
        agent.wait_for(AGENT_WAITING_FOR_MODEL, 1, timeout_s=30, agent="scorer")
        assert agent.value(SCORED, agent="scorer", metric="answer_relevancy") == 0
        with ScriptedProcess(scenario(), port):  # KEDA's replica, up
            agent.wait_for(SCORED, 1, timeout_s=60, agent="scorer", metric="answer_relevancy")
        assert agent.value("rag_answer_relevancy_score", agent="scorer", source="online") == (
            pytest.approx(0.8)
        )
        for reason in ("connection", "model_asleep"):
            labels = {"agent": "scorer", "metric": "answer_relevancy", "reason": reason}
            assert not agent.value(ERRORS, **labels), labels
            assert not agent.value(SKIPPED, **labels), labels


def test_a_judge_that_does_not_wake_in_time_skips_the_sample_and_counts_no_error(
    tmp_path: Path,
) -> None:
    port = free_port()  # nothing ever listens there
    with AgentProcess(_config(port, 1), tmp_path, name="sleeper") as agent:
        _answered(agent)
        labels = {"agent": "sleeper", "metric": "answer_relevancy"}
        agent.wait_for(SKIPPED, 1, timeout_s=30, reason="model_asleep", **labels)
        assert not agent.value(ERRORS, reason="connection", **labels)
        assert agent.value("rag_answer_relevancy_score", agent="sleeper", source="online") is None
        _answered(agent)  # the agent still answers
