"""A scheduled RAGAS run end to end: golden questions → the real agent over HTTP (scripted model,
in-process tool) → the scripted judge → scores, failures and skips in the result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.core.cli import main
from sleuth.evals.golden.cases import GoldenCase
from sleuth.scoring.samples import RagSample
from sleuth.scripted import ScriptedServer
from tests.evals.golden_kit import frozen_golden, seed_cases

pytestmark = pytest.mark.integration


def test_golden_questions_through_the_agent(
    agent_url: str, judge_server: ScriptedServer, worked_example: RagSample, tmp_path: Path
) -> None:
    too_long = GoldenCase(
        id="too-long", question="x" * 20001, reference="-", stratum="easy", split="test"
    )
    golden = frozen_golden([*seed_cases(worked_example, "test"), too_long], tmp_path)
    out, record = tmp_path / "r.json", tmp_path / "runs.jsonl"
    code = main(
        [
            "eval",
            "ragas",
            "--golden",
            str(golden),
            "--agent-url",
            agent_url,
            "--split",
            "test",
            "--final-report",
            "--judge-url",
            judge_server.url,
            "--judge-model",
            "judge",
            "--metrics",
            "faithfulness,context_recall",
            "--out",
            str(out),
            "--record",
            str(record),
            "--no-progress",
        ]
    )
    doc = json.loads(out.read_text())
    # the worked example's answer, retrieved through the agent's real loop and tool
    assert doc["metrics"]["faithfulness"]["value"] == 0.75
    assert doc["metrics"]["context_recall"]["value"] == 1.0
    assert doc["metrics"]["faithfulness"]["rows"] == 1
    # the agent refused the 20001-character question: counted, and it fails the gate
    assert [(f["row_id"], f["metric"], f["reason"]) for f in doc["failures"]] == [
        ("too-long", "agent", "agent_http_422")
    ]
    # the adversarial refusal retrieved nothing: skipped, not failed
    assert {(s["row_id"], s["reason"]) for s in doc["skipped"]} == {
        ("false-premise", "no_contexts")
    }
    assert code == 1
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert [r["id"] for r in runs] == ["redis", "false-premise"]
    assert runs[0]["answer"] == worked_example.answer
