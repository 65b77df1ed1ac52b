"""Each golden question's trace id: from the agent's response into the result row and the HTML
report (a link when a trace UI template is given)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import Request
from fastapi.responses import JSONResponse, Response

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.cli import main
from sleuth.core.jsonl import dump_jsonl
from sleuth.core.names import TRACE_ID_HEADER
from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.rag.runner import RagRun
from sleuth.evals.report.html import check_trace_url, render, trace_cell
from sleuth.evals.report.results import RunLabels, ragas_document
from sleuth.evals.traces import parse_record, trace_id_of
from sleuth.scoring.samples import RagSample
from sleuth.scripted import ScriptedServer
from tests.evals.conftest import Chunks, planner
from tests.evals.golden_kit import ADVERSARIAL, frozen_golden, seed_cases
from tests.support.asgi import serve_app

JAEGER = "http://jaeger.example:16686/trace/{trace_id}"


def trace_id_for(question: str) -> str:
    return hashlib.sha256(question.encode()).hexdigest()[:32]


@pytest.fixture
def traced_agent_url(worked_example: RagSample) -> Iterator[str]:
    """The real agent service, with a trace id on each answer the way a traced agent sends it:
    the worked example's in the body's ``sleuth.traceId`` (and the header), any other question's
    in the ``X-Sleuth-Trace-Id`` header only."""
    with ScriptedServer(responder=planner(worked_example.question, worked_example.answer)) as model:
        config = AgentConfig.model_validate(
            {"model": {"endpoint": model.url, "servedModelName": "scripted"}}
        )
        app = create_app(config, tools={"vector_search": BoundTool(Chunks())}, name="redis")

        @app.middleware("http")
        async def traced(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            question = json.loads(await request.body()).get("question", "")
            response = await call_next(request)
            body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]
            data = json.loads(body)
            tid = trace_id_for(question)
            if question == worked_example.question:
                data["sleuth"] = {"traceId": tid}
            return JSONResponse(data, response.status_code, headers={TRACE_ID_HEADER: tid})

        with serve_app(app) as served:
            yield served.url


@pytest.mark.integration
def test_rows_carry_the_trace_id_of_their_agent_request(
    traced_agent_url: str,
    judge_server: ScriptedServer,
    worked_example: RagSample,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = frozen_golden(seed_cases(worked_example, "dev"), tmp_path)
    out, record, page = tmp_path / "r.json", tmp_path / "runs.jsonl", tmp_path / "r.html"
    main(
        [
            "eval",
            "ragas",
            "--golden",
            str(golden),
            "--agent-url",
            traced_agent_url,
            "--judge-url",
            judge_server.url,
            "--judge-model",
            "judge",
            "--metrics",
            "faithfulness",
            "--out",
            str(out),
            "--record",
            str(record),
            "--html",
            str(page),
            "--trace-url-template",
            JAEGER,
            "--no-progress",
        ]
    )
    doc = json.loads(out.read_text())
    rows = {r["id"]: r for r in doc["rows"]}
    assert rows["redis"]["traceId"] == trace_id_for(worked_example.question)  # from the body
    assert rows["false-premise"]["traceId"] == trace_id_for(ADVERSARIAL)  # from the header
    assert rows["redis"]["scores"]["faithfulness"] == 0.75
    # the console (the eval Job's log) names the lowest rows with their traces
    expected = f"0.7500 row redis trace {trace_id_for(worked_example.question)}"
    assert expected in capsys.readouterr().out
    # the saved records keep the id in the agent's own place, read back by --traces / --samples
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert {r["id"]: r["sleuth"]["traceId"] for r in runs} == {
        "redis": trace_id_for(worked_example.question),
        "false-premise": trace_id_for(ADVERSARIAL),
    }
    assert parse_record(runs[0]).trace_id == trace_id_for(worked_example.question)
    # the report shows each id next to its row's scores, as a link into the trace UI
    html = page.read_text()
    link = JAEGER.replace("{trace_id}", trace_id_for(worked_example.question))
    row = html[html.index("<td>redis</td>") :].split("</tr>", 1)[0]
    assert "<td>0.750</td>" in row
    assert f'<a href="{link}">' in row


@pytest.mark.integration
def test_an_untraced_agent_leaves_the_trace_id_null(
    agent_url: str, judge_server: ScriptedServer, worked_example: RagSample, tmp_path: Path
) -> None:
    case = GoldenCase(
        id="redis",
        question=worked_example.question,
        reference=worked_example.reference or "",
        stratum="easy",
        split="dev",
    )
    golden, out, page = tmp_path / "golden.jsonl", tmp_path / "r.json", tmp_path / "r.html"
    dump_jsonl([case], golden)
    main(
        [
            "eval",
            "ragas",
            "--golden",
            str(golden),
            "--agent-url",
            agent_url,
            "--judge-url",
            judge_server.url,
            "--judge-model",
            "judge",
            "--metrics",
            "faithfulness",
            "--out",
            str(out),
            "--html",
            str(page),
            "--no-progress",
        ]
    )
    (row,) = json.loads(out.read_text())["rows"]
    assert row["traceId"] is None
    assert row["scores"]["faithfulness"] == 0.75
    assert "<td>n/a</td></tr>" in page.read_text()


def _doc(rows: list[tuple[str, float | None, str | None]]) -> dict[str, Any]:
    run = RagRun(
        rows=[
            {
                "id": rid,
                "stratum": "easy",
                "split": "dev",
                "traceId": tid,
                "scores": {} if value is None else {"faithfulness": value},
                "details": {},
            }
            for rid, value, tid in rows
        ],
        failures=[],
        metrics=["faithfulness"],
        usage={},
        judge={},
        duration_s=0.0,
        value_names=["faithfulness"],
    )
    return ragas_document(run, RunLabels("a", "d", "dev"), {"faithfulness": 0.8})


@pytest.mark.unit
def test_report_lists_rows_worst_first_with_their_trace_links(tmp_path: Path) -> None:
    a, b = "a" * 32, "b" * 32
    doc = _doc([("good", 0.9, a), ("bad", 0.2, b), ("unscored", None, None)])
    html = render([doc], trace_url=JAEGER)
    table = html[html.index("<table class=rows>") :].split("</table>", 1)[0]
    order = [table.index(f"<td>{rid}</td>") for rid in ("bad", "good", "unscored")]
    assert order == sorted(order)
    assert f'<a href="http://jaeger.example:16686/trace/{b}"><code>{b}</code></a>' in table
    assert table.count("<a href=") == 2
    # without a template: the ids as text
    plain = render([doc])
    assert f"<code>{a}</code>" in plain
    assert "<a href=" not in plain

    # `sleuth eval report` renders a saved result the same way
    result, page = tmp_path / "r.json", tmp_path / "r.html"
    result.write_text(json.dumps(doc))
    assert (
        main(["eval", "report", str(result), "--html", str(page), "--trace-url-template", JAEGER])
        == 1
    )
    assert f'<a href="http://jaeger.example:16686/trace/{b}">' in page.read_text()


@pytest.mark.unit
def test_trace_url_template_is_checked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert check_trace_url(JAEGER) == JAEGER
    for bad in ("http://jaeger/trace/", "jaeger/{trace_id}"):
        with pytest.raises(ValueError, match="trace URL template"):
            check_trace_url(bad)
    result = tmp_path / "r.json"
    result.write_text(json.dumps(_doc([("x", 0.5, None)])))
    with pytest.raises(SystemExit) as exc:
        main(["eval", "report", str(result), "--trace-url-template", "http://jaeger/trace/"])
    assert exc.value.code == 2
    assert "has no {trace_id}" in capsys.readouterr().err
    # a template cannot smuggle markup into the page
    cell = trace_cell("c" * 32, 'http://x/{trace_id}"><script>')
    assert "<script>" not in cell


@pytest.mark.unit
def test_trace_id_of_reads_the_body_then_the_header() -> None:
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id_of({"sleuth": {"traceId": tid}}) == tid
    assert trace_id_of({"sleuth": {"traceId": tid}}, "f" * 32) == tid
    assert trace_id_of({}, tid.upper()) == tid
    assert trace_id_of({"answer": "x"}) is None
    assert trace_id_of({"sleuth": "nope"}, "not-an-id") is None
    assert trace_id_of({"sleuth": {"traceId": "0" * 31}}) is None
