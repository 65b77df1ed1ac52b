"""One agent request, traced across processes into a real trace backend (Jaeger), read back.

Real parts: ``sleuth agent`` and two ``sleuth tool-service`` processes (sql_query on the sample
PostgreSQL, vector_search on Qdrant local mode with the real embedding model), each exporting
over OTLP/HTTP to Jaeger (tests/support/jaeger.py) as the standard ``OTEL_*`` variables say; the
scripted model server over HTTP. The test sends the seed question, takes the trace id the agent
answers with, and reads the trace back through Jaeger's query API: the span tree
(``invoke_agent`` → ``chat`` ×3, ``execute_tool`` ×2 → the tool services' ``tool`` spans, in
other processes), the attributes an SRE reads (tokens, finish reasons, tool status, guard
verdict, rows, retrieved chunk ids), and the trace id in the agent's request log line. Then a
scheduled eval's run (``sleuth eval ragas --agent-url``, a traced process too): its question's
trace holds the agent's request and the judge's score.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.jsonl import dump_jsonl
from sleuth.core.names import TRACE_ID_HEADER
from sleuth.evals.golden.cases import GoldenCase
from sleuth.scripted import Scenario, ScriptedServer
from sleuth.tools.sample.contracts import SEED_QUESTION
from tests.agent.agent_process import AgentProcess
from tests.agent.test_online_eval import judge_rules
from tests.support.jaeger import Jaeger, SpanView
from tests.support.seed import SEED_ANSWER, seed_rules
from tests.tools.service_process import ServiceProcess, sql_binding, vector_binding

pytestmark = [pytest.mark.integration, pytest.mark.slow]

AGENT = "contracts"
EXPORT_FAST = {"OTEL_BSP_SCHEDULE_DELAY": "100"}  # export within 0.1 s, not the default 1 s


def _otel(jaeger: Jaeger, service: str | None = None) -> dict[str, str]:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": jaeger.otlp_endpoint, **EXPORT_FAST}
    if service is not None:
        env["OTEL_SERVICE_NAME"] = service
    return env


@pytest.fixture(scope="module")
def traced_services(
    jaeger: Jaeger, postgres: Any, sample_qdrant: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    folder = tmp_path_factory.mktemp("traced-services")
    qdrant = folder / "qdrant"
    shutil.copytree(sample_qdrant, qdrant)
    sql_env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn, **_otel(jaeger, "sleuth-tool-sql")}
    sql = ServiceProcess(sql_binding(), folder, sql_env)
    # no OTEL_SERVICE_NAME: the default name, sleuth-tool-<tool name>
    vector_env = {"SLEUTH_QDRANT_PATH": str(qdrant), **_otel(jaeger)}
    vector = ServiceProcess(vector_binding(), folder, vector_env)
    try:
        yield sql.wait_healthy(), vector.wait_healthy()
    finally:
        sql.stop()
        vector.stop()


@pytest.fixture
def traced_agent(
    jaeger: Jaeger,
    scripted: ScriptedServer,
    traced_services: tuple[ServiceProcess, ServiceProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[AgentProcess]:
    for key, value in _otel(jaeger).items():  # the agent process inherits this environment
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    sql, vector = traced_services
    config = {
        "model": {"endpoint": scripted.url, "servedModelName": "scripted", "timeoutSeconds": 60},
        "requestTimeoutSeconds": 120,
        "tools": [
            {"name": "sql_query", "type": "sql_query", "endpoint": sql.url, "timeoutSeconds": 60},
            {
                "name": "vector_search",
                "type": "vector_search",
                "endpoint": vector.url,
                "timeoutSeconds": 60,
            },
        ],
    }
    with AgentProcess(config, tmp_path, name=AGENT) as agent:
        yield agent


def _list(value: Any) -> list[Any]:
    """An array attribute as the query API gives it (a list, or its JSON text)."""
    return list(json.loads(value)) if isinstance(value, str) else list(value)


def test_one_request_is_one_trace_across_agent_and_tool_services(
    jaeger: Jaeger, scripted: ScriptedServer, traced_agent: AgentProcess
) -> None:
    scripted.set_scenario(Scenario(rules=seed_rules()))
    scripted.clear_requests()
    response = traced_agent.ask(SEED_QUESTION)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == SEED_ANSWER
    trace_id = response.headers[TRACE_ID_HEADER]
    assert body["sleuth"]["traceId"] == trace_id

    # root + 3 chat + 2 execute_tool (agent) + 2 tool (the services), from three processes
    trace = jaeger.wait_trace(trace_id, spans=8, timeout=60)
    root = trace.one(f"invoke_agent {AGENT}")
    assert root.parent_id is None
    assert root.kind == "server"
    assert root.service == f"sleuth-agent-{AGENT}"
    assert root.attributes["sleuth.stop_reason"] == "answered"
    assert root.attributes["gen_ai.usage.input_tokens"] > 0

    children = trace.children(root)
    chats = [s for s in children if s.name == "chat scripted"]
    assert len(chats) == 3
    assert all(s.kind == "client" for s in chats)
    for chat in chats:
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
        assert "sleuth.ttft_ms" in chat.attributes
    reasons = sorted(_list(c.attributes["gen_ai.response.finish_reasons"])[0] for c in chats)
    assert reasons == ["stop", "tool_calls", "tool_calls"]

    def executed(tool: str) -> SpanView:
        [span] = [s for s in children if s.name == f"execute_tool {tool}"]
        assert span.attributes["sleuth.tool.status"] == "ok"
        assert span.attributes["gen_ai.tool.call.id"]
        return span

    def served(by: SpanView, tool: str, service: str) -> SpanView:
        [span] = trace.children(by)
        assert (span.name, span.kind, span.service) == (f"tool {tool}", "server", service)
        assert span.attributes["sleuth.tool.outcome"] == "ok"
        return span

    sql = served(executed("sql_query"), "sql_query", "sleuth-tool-sql")
    assert sql.attributes["sleuth.sql.guard_verdict"] == "accepted"
    assert sql.attributes["sleuth.sql.rows"] == 1
    assert sql.attributes["sleuth.sql.duration_ms"] > 0
    search = executed("vector_search")
    vector = served(search, "vector_search", "sleuth-tool-vector_search")
    hits = _list(vector.attributes["sleuth.vector.hits"])
    assert "contract-provider-a-2025#0" in hits
    assert _list(search.attributes["sleuth.citations"]) == hits  # what the agent was given

    # the model server got each chat span as its parent; the agent logged the request's id
    parents = {p.split("-")[2] for p in scripted.traceparents() if p}
    assert parents == {c.span_id for c in chats}
    assert f"trace_id={trace_id}" in traced_agent.output()
    assert trace_id in [t.trace_id for t in jaeger.traces(f"sleuth-agent-{AGENT}")]


def test_an_eval_run_puts_each_question_and_its_scores_on_the_agents_trace(
    jaeger: Jaeger, scripted: ScriptedServer, traced_agent: AgentProcess, tmp_path: Path
) -> None:
    """``sleuth eval ragas --agent-url`` as a traced process: each golden question is a trace of
    its own (``eval_case``), the agent's request and the tool services' spans join it, and the
    judge's score hangs on it — the row's ``traceId`` leads there from the report."""
    # the judge's rules first: its prompts quote the question the seed rules match on
    scripted.set_scenario(Scenario(rules=[*judge_rules(supported=1), *seed_rules()]))
    case = GoldenCase(
        id="seed-1", question=SEED_QUESTION, reference="47", stratum="easy", split="dev"
    )
    golden = tmp_path / "golden.jsonl"
    dump_jsonl([case], golden)
    out = tmp_path / "result.json"
    env = {**os.environ, **_otel(jaeger)}
    env.pop("OTEL_SERVICE_NAME", None)  # the default: sleuth-eval
    cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
    cmd += ["eval", "ragas", "--golden", str(golden), "--agent-url", traced_agent.url]
    cmd += ["--judge-url", scripted.url, "--judge-model", "scripted", "--metrics", "faithfulness"]
    cmd += ["--out", str(out), "--no-progress", "--run-id", "nightly-1"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # 0.25 misses the default threshold
    result = json.loads(out.read_text())
    assert not result["failures"], result["failures"]
    [row] = result["rows"]
    assert row["scores"]["faithfulness"] == pytest.approx(0.25)
    trace_id = row["traceId"]
    assert trace_id

    # eval_case + evaluate, and the agent's 8 spans (root, 3 chat, 2 execute_tool, 2 tool)
    trace = jaeger.wait_trace(trace_id, spans=10, timeout=60)
    question = trace.one("eval_case seed-1")
    assert question.parent_id is None
    assert (question.service, question.kind) == ("sleuth-eval", "client")
    assert question.attributes["sleuth.eval.case.id"] == "seed-1"
    below = {s.name: s for s in trace.children(question)}
    agent = below[f"invoke_agent {AGENT}"]
    assert agent.service == f"sleuth-agent-{AGENT}"
    assert {s.name for s in trace.children(agent)} >= {
        "execute_tool sql_query",
        "execute_tool vector_search",
    }
    assert [s.service for s in trace.spans if s.name == "tool sql_query"] == ["sleuth-tool-sql"]
    score = below["evaluate faithfulness"]
    assert score.attributes["sleuth.eval.score.faithfulness"] == pytest.approx(0.25)
    assert score.events[0]["gen_ai.evaluation.score.value"] == pytest.approx(0.25)

    # the run's own span, which every question's span links to
    [run] = [
        t
        for t in jaeger.traces("sleuth-eval")
        if any(s.name == "eval ragas golden" for s in t.spans)
    ]
    span = run.one("eval ragas golden")
    assert span.attributes["sleuth.eval.run_id"] == "nightly-1"
    assert span.attributes["sleuth.eval.cases"] == 1
    assert (run.trace_id, span.span_id) in question.links
