"""Scoring recorded agent traces, and RAGAS rows checked against a frozen golden dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.agent.trace import ModelStep, RequestedCall, ToolCallRecord, ToolStep, Trace
from sleuth.core.cli import main
from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.data import worked_example_path
from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.golden.manifest import freeze
from sleuth.evals.traces import load_recorded
from sleuth.scoring.samples import load_samples

pytestmark = pytest.mark.unit


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def trace(question: str, calls: list[tuple[str, str]], answer: str) -> Trace:
    first = ModelStep(
        iteration=0,
        start_ms=0,
        end_ms=10,
        ttft_ms=None,
        tool_calls=[
            RequestedCall(id=f"c{i}", name=n, arguments_text=a) for i, (n, a) in enumerate(calls)
        ],
    )
    tools = ToolStep(
        iteration=1,
        parallel=len(calls) > 1,
        start_ms=10,
        end_ms=20,
        calls=[
            ToolCallRecord(
                id=f"c{i}",
                tool=n,
                arguments=json.loads(a),
                status="ok",
                observation=f"observation {i}",
                start_ms=10,
                end_ms=20,
                citations=[{"id": f"doc-{i}", "source": "s"}],
            )
            for i, (n, a) in enumerate(calls)
        ],
    )
    final = ModelStep(iteration=1, start_ms=20, end_ms=30, ttft_ms=None, content=answer)
    return Trace(question=question, model="m", steps=[first, tools, final], iterations=1)


def test_recorded_runs_give_first_calls_answer_and_contexts(tmp_path: Path) -> None:
    t = trace(
        "How many orders in March?",
        [("sql_query", '{"query": "SELECT count(*) FROM orders WHERE month = $1", "params": [3]}')],
        "There were 42 orders.",
    )
    path = tmp_path / "runs.jsonl"
    path.write_text(
        json.dumps({"answer": "42 orders.", "trace": t.model_dump(by_alias=True)})
        + "\n"
        + t.model_dump_json(by_alias=True)
        + "\n"
    )
    api_result, bare = load_recorded(path)
    assert api_result.answer == "42 orders."
    assert bare.answer == "There were 42 orders."
    assert [c.name for c in bare.first_calls] == ["sql_query"]
    assert bare.first_calls[0].arguments == {
        "query": "SELECT count(*) FROM orders WHERE month = $1",
        "params": [3],
    }
    assert bare.contexts == ["observation 0"]
    assert bare.context_ids == ["doc-0"]


def test_tsa_from_traces(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        '{"id": "orders", "query": "How many orders in March?", "split": "dev", "expected": '
        '[{"name": "sql_query", "arguments": {"query": [{"$regex": "count"}], '
        '"params": ["", {"$any": true}]}}]}\n'
        '{"id": "policy", "query": "What does the returns policy say?", "split": "dev", '
        '"expected": [{"name": "vector_search", "arguments": {"query": [{"$any": true}]}}]}\n'
        '{"id": "missing", "query": "Hello?", "split": "dev", "expected": []}\n'
    )
    runs = tmp_path / "runs.jsonl"
    orders = trace(
        "How many orders in March?", [("sql_query", '{"query": "select count(*)"}')], "42"
    )
    policy = trace(
        "What does the returns policy say?", [("sql_query", '{"query": "select 1"}')], "?"
    )
    traced = {  # an agent API result of a traced agent: its trace id in the `sleuth` part
        "answer": "?",
        "trace": policy.model_dump(by_alias=True),
        "sleuth": {"traceId": TRACE_ID},
    }
    runs.write_text(orders.model_dump_json(by_alias=True) + "\n" + json.dumps(traced) + "\n")
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    code = main(
        [
            "eval",
            "tsa",
            "--traces",
            str(runs),
            "--cases",
            str(cases),
            "--out",
            str(out),
            "--html",
            str(page),
            "--trace-url-template",
            "http://jaeger:16686/trace/{trace_id}",
            "--threshold",
            "tool_selection_accuracy=0.3",
            "--max-failed-rows",
            "1",
        ]
    )
    doc = json.loads(out.read_text())
    by_id = {c["id"]: c for c in doc["cases"]}
    assert by_id["orders"]["passed"] is True
    assert by_id["policy"]["predicted"] == "sql_query"
    assert by_id["missing"]["error"] == "no recorded trace for this case"
    assert (by_id["orders"]["traceId"], by_id["policy"]["traceId"]) == (None, TRACE_ID)
    # the failed case's row in the report links its trace
    assert f'<a href="http://jaeger:16686/trace/{TRACE_ID}">' in page.read_text()
    assert doc["metrics"]["tool_selection_accuracy"]["value"] == pytest.approx(1 / 3)
    assert code == 0


def test_ragas_rows_must_match_the_frozen_golden_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = load_samples(worked_example_path())[0]
    golden = tmp_path / "golden.jsonl"
    case = GoldenCase(
        id=row.id,
        question=row.question,
        reference=row.reference or "",
        stratum="easy",
        split="test",
    )
    dump_jsonl([case], golden)
    freeze([case], golden)
    # the row says dev, the frozen golden case says test: refused before any judge call
    code = main(
        [
            "eval",
            "ragas",
            "--samples",
            str(worked_example_path()),
            "--golden",
            str(golden),
            "--judge-url",
            "http://127.0.0.1:9/v1",
            "--judge-model",
            "j",
        ]
    )
    assert code == 2
    assert "has split dev, the golden dataset says test" in capsys.readouterr().err
