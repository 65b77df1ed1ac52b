"""`sleuth eval ...` end to end against the scripted model server over real HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.cli import main
from sleuth.evals.tsa.cases import TsaCase, load_cases, shipped_cases_path
from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall

pytestmark = pytest.mark.integration


def promtool_check(text: str) -> None:
    """The exposition passes ``promtool check metrics`` (Debian's prometheus package)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is missing under CI (make promtool installs it)")
        pytest.skip("promtool not installed (make promtool)")
    done = subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def router(cases: list[TsaCase], wrong: set[str]) -> Any:
    """A scripted model that calls the expected tools, except for the case ids in ``wrong``."""
    by_query = {c.query: c for c in cases}

    def respond(body: dict[str, Any]) -> ScriptedResponse:
        query = body["messages"][-1]["content"]
        case = by_query[query]
        if case.id in wrong:
            return ScriptedResponse(
                tool_calls=[ScriptedToolCall(name="vector_search", arguments={"query": query})]
            )
        calls = []
        for e in case.expected:
            args: dict[str, Any] = {}
            for name, acceptable in e.arguments.items():
                a = acceptable[0]
                if a == "":
                    continue
                if isinstance(a, dict) and "$contains" in a:
                    args[name] = " ".join(a["$contains"])
                elif isinstance(a, dict) and "$regex" in a:
                    args[name] = {
                        "sql_query": "SELECT COUNT(*), SUM(amount), AVG(x), MAX(y) "
                        "FROM contracts, orders, invoices GROUP BY 1 ORDER BY 1 "
                        "LIMIT 5"
                    }.get(e.name, query)
                elif isinstance(a, dict):
                    args[name] = query
                else:
                    args[name] = a
            calls.append(ScriptedToolCall(name=e.name, arguments=args))
        return ScriptedResponse(tool_calls=calls) if calls else ScriptedResponse(content="Hi.")

    return respond


def test_tsa_cli_scores_the_shipped_set_and_gates(tmp_path: Path) -> None:
    cases = load_cases(shipped_cases_path(), "dev")
    wrong = {c.id for c in cases if "sql_query" in c.expected_label.split("+")}
    single = sum(1 for c in cases if c.expected_label == "sql_query")
    with ScriptedServer(responder=router(cases, wrong)) as server:
        out, prom, page = tmp_path / "r.json", tmp_path / "m.prom", tmp_path / "r.html"
        code = main(
            [
                "eval",
                "tsa",
                "--endpoint",
                server.url,
                "--agent",
                "contracts",
                "--out",
                str(out),
                "--prom",
                str(prom),
                "--html",
                str(page),
                "--no-progress",
            ]
        )
        bodies = server.requests()
    doc = json.loads(out.read_text())
    n, n_wrong = len(cases), len(wrong)
    assert doc["metrics"]["tool_selection_accuracy"]["value"] == pytest.approx((n - n_wrong) / n)
    assert doc["summary"]["per_tool"]["sql_query"]["tsa"] == 0.0
    assert doc["summary"]["per_tool"]["web_search"]["tsa"] == 1.0
    assert doc["summary"]["confusion"]["sql_query"] == {"vector_search": single}
    assert doc["summary"]["argument_accuracy"] == 1.0
    assert code == 1  # below 0.85
    assert not doc["gate"]["passed"]
    assert len(bodies) == n
    assert {b["tool_choice"] for b in bodies} == {"auto"}
    assert {t["function"]["name"] for t in bodies[0]["tools"]} == {
        "vector_search",
        "sql_query",
        "web_search",
    }
    text = prom.read_text()
    assert (
        'agent_tool_selection_accuracy{agent="contracts",dataset="tsa_cases",split="dev"}' in text
    )
    assert 'tool="sql_query"} 0.0' in text
    promtool_check(text)
    html = page.read_text()
    assert "<svg" in html
    assert "Confusion matrix" in html
    assert "Gate FAILED" in html


def test_tsa_cli_passes_with_a_perfect_router_and_counts_endpoint_errors(tmp_path: Path) -> None:
    cases = load_cases(shipped_cases_path(), "dev")
    with ScriptedServer(responder=router(cases, set())) as server:
        out = tmp_path / "r.json"
        assert (
            main(["eval", "tsa", "--endpoint", server.url, "--out", str(out), "--no-progress"]) == 0
        )
    assert json.loads(out.read_text())["metrics"]["tool_selection_accuracy"]["value"] == 1.0

    def failing(body: dict[str, Any]) -> ScriptedResponse:
        return ScriptedResponse(status=400, error_message="bad request")

    with ScriptedServer(responder=failing) as server:
        code = main(
            [
                "eval",
                "tsa",
                "--endpoint",
                server.url,
                "--out",
                str(out),
                "--no-progress",
                "--threshold",
                "tool_selection_accuracy=0",
            ]
        )
    doc = json.loads(out.read_text())
    assert code == 1
    assert doc["summary"]["errors"] == len(cases)
    assert doc["gate"]["reasons"] == [f"{len(cases)} failed rows/cases > allowed 0"]


def test_test_split_is_refused_without_final_report(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "tsa", "--endpoint", "http://127.0.0.1:9/v1", "--split", "test"])
    assert code == 2
    assert "final reports only" in capsys.readouterr().err


def test_ragas_cli_on_the_worked_example(judge_server: ScriptedServer, tmp_path: Path) -> None:
    from sleuth.evals.data import worked_example_path

    out, prom, page = tmp_path / "r.json", tmp_path / "m.prom", tmp_path / "r.html"
    code = main(
        [
            "eval",
            "ragas",
            "--samples",
            str(worked_example_path()),
            "--judge-url",
            judge_server.url,
            "--judge-model",
            "judge",
            "--agent",
            "redis-rag",
            "--out",
            str(out),
            "--prom",
            str(prom),
            "--html",
            str(page),
            "--no-progress",
        ]
    )
    doc = json.loads(out.read_text())
    m = doc["metrics"]
    assert m["faithfulness"]["value"] == 0.75
    assert m["faithfulness"]["passed"] is False  # below the 0.80 alert threshold
    assert m["context_precision_simple"]["value"] == 0.6
    assert m["context_recall"]["value"] == 1.0
    assert round(m["answer_relevancy"]["value"], 2) == 0.72
    assert code == 1
    assert doc["usage"]["judge_requests"] == 24
    text = prom.read_text()
    labels = 'agent="redis-rag",dataset="rag_worked_example",split="dev"'
    precision = 'agent="redis-rag",dataset="rag_worked_example",form="simple",split="dev"'
    assert f"rag_faithfulness_score{{{labels}}} 0.75" in text
    assert f"rag_context_precision_score{{{precision}}} 0.6" in text
    assert f"rag_context_recall_score{{{labels}}} 1.0" in text
    assert "rag_answer_relevancy_score" in text
    assert "rag_noise_sensitivity_score" in text
    promtool_check(text)
    assert "Stratum: easy" in page.read_text()
    # report re-renders from the JSON alone, and keeps the gate's verdict
    assert main(["eval", "report", str(out), "--html", str(tmp_path / "again.html")]) == 1


def test_shards_merge_into_the_unsharded_result(tmp_path: Path) -> None:
    cases = load_cases(shipped_cases_path(), "dev")
    wrong = {c.id for c in cases if c.expected_label == "web_search"}
    with ScriptedServer(responder=router(cases, wrong)) as server:
        whole = tmp_path / "whole.json"
        main(["eval", "tsa", "--endpoint", server.url, "--out", str(whole), "--no-progress"])
        parts = []
        for k in range(3):
            part = tmp_path / f"part{k}.json"
            main(
                [
                    "eval",
                    "tsa",
                    "--endpoint",
                    server.url,
                    "--shard",
                    f"{k}/3",
                    "--out",
                    str(part),
                    "--no-progress",
                ]
            )
            parts.append(part)
    sizes = [len(json.loads(p.read_text())["cases"]) for p in parts]
    assert sum(sizes) == len(cases)
    assert all(sizes)  # 31 cases over 3 shards: none empty
    merged = tmp_path / "merged.json"
    code = main(["eval", "report", "--merge", *map(str, parts), "--out", str(merged)])
    a, b = json.loads(whole.read_text()), json.loads(merged.read_text())
    assert b["metrics"] == a["metrics"]
    assert b["summary"]["confusion"] == a["summary"]["confusion"]
    assert b["merged_shards"] == ["0/3", "1/3", "2/3"]
    assert b["dataset_sha256"] == a["dataset_sha256"] != ""
    assert code == (0 if a["gate"]["passed"] else 1)
    # a shard given twice is refused
    assert main(["eval", "report", "--merge", str(parts[0]), str(parts[0])]) == 2


def test_tsa_through_the_agents_streaming_model_client(tmp_path: Path) -> None:
    cases = load_cases(shipped_cases_path(), "dev")
    wrong = {c.id for c in cases if c.expected_label == "web_search"}
    with ScriptedServer(responder=router(cases, wrong)) as server:
        out = tmp_path / "r.json"
        code = main(
            [
                "eval",
                "tsa",
                "--endpoint",
                server.url,
                "--agent-client",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        bodies = server.requests()
    doc = json.loads(out.read_text())
    assert all(b.get("stream") is True for b in bodies)  # the agent's client streams
    per_tool = doc["summary"]["per_tool"]
    assert per_tool["web_search"]["tsa"] == 0.0
    assert per_tool["sql_query"]["tsa"] == 1.0
    assert per_tool["vector_search"]["tsa"] == 1.0
    assert doc["summary"]["argument_accuracy"] == 1.0  # arguments survived SSE reassembly
    assert code == 1
