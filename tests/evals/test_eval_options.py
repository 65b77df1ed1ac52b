"""The typed options of ``sleuth eval``: built once from what the parser read, and enough to run
a command without a parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.core.cli import build_parser
from sleuth.evals.cli.files import golden_options
from sleuth.evals.cli.runs import ragas_options, retrieval_options, tsa_options
from sleuth.evals.commands.dispatch import run
from sleuth.evals.commands.options import (
    FreezeOptions,
    Outputs,
    RetrievalOptions,
    RunOptions,
    StatusOptions,
    VerifyOptions,
)
from sleuth.evals.golden.cases import shipped_golden_path
from sleuth.evals.status import StatusTarget

pytestmark = pytest.mark.unit

# The flags an EvalSchedule's CronJob passes (sleuth.operator.render.evalschedule), by value.
COMMON = [
    "--agent", "contracts", "--split", "test", "--final-report", "--concurrency", "4",
    "--no-progress", "--out", "/var/lib/sleuth/results/x.json", "--shard", "1/4",
    "--dataset", "golden_contracts",
]  # fmt: skip
TSA = [
    "eval", "tsa", "--endpoint", "http://vllm:8000/v1", "--model", "llama", "--agent-client",
    *COMMON, "--threshold", "tool_selection_accuracy=0.85",
    "--status", "team-a/nightly", "--run-id", "job-1", "--expect-parts", "8",
]  # fmt: skip
RAGAS = [
    "eval", "ragas", "--golden", "/var/lib/sleuth/dataset/g.jsonl",
    "--agent-url", "http://contracts-agent.team-a.svc:8080",
    "--judge-url", "http://vllm:8000/v1", "--judge-model", "llama", "--embeddings-url", "local",
    "--metrics", "faithfulness, answer_relevancy,,context_recall", *COMMON,
]  # fmt: skip


def test_a_scheduled_tsa_run_reads_as_typed_options() -> None:
    ns = build_parser("eval").parse_args(TSA)
    options = tsa_options(ns)
    assert options.run == RunOptions(
        agent="contracts",
        dataset="golden_contracts",
        split="test",
        final_report=True,
        thresholds=("tool_selection_accuracy=0.85",),
        outputs=Outputs(out=Path("/var/lib/sleuth/results/x.json")),
        progress=False,
        shard="1/4",
    )
    assert (options.endpoint, options.model, options.agent_client) == (
        "http://vllm:8000/v1",
        "llama",
        True,
    )
    assert options.client.concurrency == 4
    assert options.status == StatusOptions(StatusTarget("team-a", "nightly"), "job-1", 8)


def test_a_scheduled_ragas_run_reads_as_typed_options() -> None:
    ns = build_parser("eval").parse_args(RAGAS)
    options = ragas_options(ns)
    assert options.metrics == ("faithfulness", "answer_relevancy", "context_recall")
    assert (options.judge.url, options.judge.model, options.judge.embeddings_url) == (
        "http://vllm:8000/v1",
        "llama",
        "local",
    )
    assert options.golden == Path("/var/lib/sleuth/dataset/g.jsonl")
    assert options.run.shard == "1/4"
    assert options.status.target is None  # no --status, no SLEUTH_EVAL_STATUS


def test_retrieval_has_no_shard_and_no_trace_links() -> None:
    ns = build_parser("eval").parse_args(["eval", "retrieval", "--samples", "rows.jsonl"])
    options = retrieval_options(ns)
    assert options.run.shard is None
    assert options.run.outputs.trace_url is None
    assert options.samples == Path("rows.jsonl")


def test_each_build_golden_step_has_its_own_options() -> None:
    parser = build_parser("eval")
    freeze = golden_options(parser.parse_args(["eval", "build-golden", "freeze", "g.jsonl"]))
    assert freeze == FreezeOptions(Path("g.jsonl"))
    verify = golden_options(parser.parse_args(["eval", "build-golden", "verify", "g.jsonl"]))
    assert verify == VerifyOptions(Path("g.jsonl"))


def test_a_command_runs_from_options_built_without_a_parser(
    capsys: pytest.CaptureFixture[str],
) -> None:
    golden = shipped_golden_path()
    assert run(VerifyOptions(golden)) == 0
    assert "matches its manifest" in capsys.readouterr().out


def test_bad_input_in_options_is_exit_2_with_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same guard as on the command line: a bad --threshold names itself, exit 2."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"id": "r1", "question": "q", "answer": "a", "contexts": [], "context_ids": [],'
        ' "reference_context_ids": ["d1"]}\n',
        encoding="utf-8",
    )
    options = RetrievalOptions(run=RunOptions(thresholds=("mrr",)), samples=rows)
    assert run(options) == 2
    assert "--threshold 'mrr': expected NAME=VALUE" in capsys.readouterr().err
