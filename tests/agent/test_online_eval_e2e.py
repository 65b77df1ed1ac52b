"""From a low online score to its request, with the agent as a traced process.

The agent (``sleuth agent``, tracing on through the standard ``OTEL_*`` variables) answers a
question; the scripted judge scores the answer low (1 of 4 statements supported). The score's
exemplar on ``sleuth_agent_online_score`` (scraped as OpenMetrics) names the trace id the client
got in ``X-Sleuth-Trace-Id``; in the trace backend (Jaeger, tests/support/jaeger.py) that trace
holds the request's ``invoke_agent`` span, its tool call and, below the root, the
``evaluate faithfulness`` span with the score — what the runbooks tell an SRE to follow.

Tracing comes with :mod:`sleuth.core.tracing` and the backend with tests/support/jaeger.py; the
tests skip where those are not part of the tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.core.names import TRACE_ID_HEADER
from sleuth.core.process import free_port
from sleuth.scripted import ScriptedServer
from tests.agent.agent_process import AgentProcess
from tests.agent.test_online_eval import (
    ANSWER,
    OPENMETRICS,
    QUESTION,
    config,
    exemplars,
    scenario,
)

pytestmark = pytest.mark.integration

AGENT = "ops"
ONLINE = {"sampleRate": 1.0, "concurrency": 1}


@pytest.fixture
def low_judge() -> Iterator[ScriptedServer]:
    """Model and judge: the answer, then faithfulness 0.25 (1 of 4 statements supported)."""
    with ScriptedServer(scenario(supported=1)) as server:
        yield server


def traced_env(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """The agent process inherits these: tracing on, exported at once."""
    pytest.importorskip("sleuth.core.tracing", reason="tracing is not in this tree")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)


def ask_traced(agent: AgentProcess) -> str:
    response = agent.ask(QUESTION)
    assert response.status_code == 200, response.text
    assert response.json()["answer"] == ANSWER
    trace_id = response.headers.get(TRACE_ID_HEADER)
    assert trace_id, f"no {TRACE_ID_HEADER}: is tracing on?\n{agent.output()}"
    return trace_id


def score_exemplar(agent: AgentProcess) -> Any:
    """The faithfulness exemplar of /metrics (OpenMetrics), once the score is in."""
    agent.wait_for("sleuth_agent_online_eval_scored_total", 1, agent=AGENT, metric="faithfulness")
    page = httpx.get(f"{agent.url}/metrics", headers={"Accept": OPENMETRICS}, timeout=10)
    assert page.headers["content-type"].startswith("application/openmetrics-text")
    by_metric = {
        lb["metric"]: (lb, ex) for lb, ex in exemplars(page.text, "sleuth_agent_online_score")
    }
    labels, exemplar = by_metric["faithfulness"]
    assert labels["le"] == "0.3"  # 0.25, in the lowest buckets the dashboard points at
    return exemplar


def test_the_exemplar_of_a_low_score_is_the_trace_id_the_client_got(
    low_judge: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a collector that is down: the spans are dropped, the ids are given out all the same
    traced_env(monkeypatch, f"http://127.0.0.1:{free_port()}")
    with AgentProcess(config(low_judge.url, ONLINE), tmp_path, name=AGENT) as agent:
        trace_id = ask_traced(agent)
        exemplar = score_exemplar(agent)
    assert exemplar.labels == {"trace_id": trace_id}
    assert exemplar.value == pytest.approx(0.25)


@pytest.mark.slow
def test_a_low_score_leads_to_its_request_in_the_trace_backend(
    low_judge: ScriptedServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    pytest.importorskip("tests.support.jaeger", reason="no trace backend in this tree")
    jaeger = request.getfixturevalue("jaeger")  # tests/support/jaeger.py's session backend
    traced_env(monkeypatch, jaeger.otlp_endpoint)
    with AgentProcess(config(low_judge.url, ONLINE), tmp_path, name=AGENT) as agent:
        ask_traced(agent)
        exemplar = score_exemplar(agent)
    # the SRE's path: the exemplar's trace id, read back from the backend
    trace_id = exemplar.labels["trace_id"]
    # root, 2 chat, 1 execute_tool, and the 2 evaluate spans that end after the request
    trace = jaeger.wait_trace(trace_id, spans=6, timeout=60)
    root = trace.one(f"invoke_agent {AGENT}")
    assert root.parent_id is None
    assert root.service == f"sleuth-agent-{AGENT}"
    below = {s.name: s for s in trace.children(root)}
    assert "execute_tool sql_query" in below
    assert below["execute_tool sql_query"].attributes["sleuth.tool.status"] == "ok"
    evaluation = below["evaluate faithfulness"]
    assert evaluation.attributes["sleuth.online.faithfulness"] == pytest.approx(0.25)
    assert evaluation.attributes["gen_ai.evaluation.name"] == "faithfulness"
    assert "evaluate answer_relevancy" in below
