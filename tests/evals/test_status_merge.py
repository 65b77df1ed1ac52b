"""The maths of a run's results in an EvalSchedule's status: parts from real result documents,
weighted means, outcomes, what a failed run keeps, and the merge patch the writer sends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sleuth.core.api.v1alpha1.evalschedule import EvalCounts, EvalPart, EvalScores
from sleuth.core.cli import main
from sleuth.evals.rag.runner import Failure, RagRun
from sleuth.evals.report.results import RunLabels, ragas_document, tsa_document
from sleuth.evals.status import (
    RunContext,
    StatusError,
    StatusTarget,
    failed_part,
    merge_patch,
    next_status,
    part_from_document,
)
from sleuth.evals.statuswriter import api_client
from sleuth.evals.tsa.runner import TsaRun
from sleuth.evals.tsa.scoring import CaseResult

pytestmark = pytest.mark.unit

T1, T2, T3 = "2026-11-29T10:00:00Z", "2026-11-29T10:05:00Z", "2026-11-29T10:07:00Z"


def rag_doc(scores: dict[str, list[float]], *, failed: int = 0, shard: str = "") -> dict[str, Any]:
    """A real ragas result document: one row per value, plus ``failed`` rows the agent failed."""
    n = max((len(v) for v in scores.values()), default=0)
    rows = [
        {
            "id": f"{shard}r{i}",
            "stratum": "easy",
            "split": "test",
            "scores": {m: v[i] for m, v in scores.items() if i < len(v)},
            "details": {},
        }
        for i in range(n)
    ]
    failures = [
        Failure(f"{shard}bad{i}", "agent", "agent_unreachable", "connection refused")
        for i in range(failed)
    ]
    names = list(scores) or ["faithfulness"]
    run = RagRun(rows, failures, names, {}, {}, 0.1, value_names=names)
    labels = RunLabels("redis", "golden", "test", dataset_sha256="aa" * 32, shard=shard)
    return ragas_document(run, labels, {})


def tsa_doc(passed: int, wrong: int, errors: int = 0, shard: str = "") -> dict[str, Any]:
    def case(i: int, ok: bool, error: str | None = None) -> CaseResult:
        label = "sql_query" if ok else "ERROR" if error else "web_search"
        return CaseResult(f"c{i}", "test", "sql_query", label, ok, ok, ok, [], [], error)

    results = [case(i, True) for i in range(passed)]
    results += [case(passed + i, False) for i in range(wrong)]
    results += [case(passed + wrong + i, False, "HTTP 503") for i in range(errors)]
    labels = RunLabels("redis", "golden", "test", dataset_sha256="bb" * 32, shard=shard)
    return tsa_document(TsaRun(results), labels, {})


def part(doc: dict[str, Any], at: str = T1) -> EvalPart:
    return part_from_document(doc, finished_at=at)


def report(status: dict[str, Any], parts: list[EvalPart], run: RunContext) -> dict[str, Any]:
    for p in parts:
        status = next_status(status, p, run)
    return status


RUN1 = RunContext("job-1", 3, "golden", "test")


def test_a_part_from_a_ragas_document() -> None:
    p = part(
        rag_doc(
            {"faithfulness": [1.0, 0.5], "context_precision_simple": [0.6, 0.4]},
            failed=1,
            shard="1/4",
        )
    )
    assert (p.name, p.kind, p.shard, p.outcome) == ("ragas-1", "ragas", "1/4", "Succeeded")
    assert (p.rows, p.failed_rows) == (3, 1)
    assert p.scores == EvalScores(faithfulness=0.75, context_precision=0.5)
    assert p.scored == EvalCounts(faithfulness=2, context_precision=2)
    assert p.dataset_sha256 == "aa" * 32


def test_a_part_from_a_tsa_document_weighs_every_case() -> None:
    p = part(tsa_doc(passed=3, wrong=1, errors=1))
    assert (p.name, p.shard, p.outcome, p.rows, p.failed_rows) == (
        "tsa-0",
        "0/1",
        "Succeeded",
        5,
        1,
    )
    # an endpoint error counts as not passing: 3 of 5, over 5 cases
    assert p.scores == EvalScores(tool_selection_accuracy=0.6)
    assert p.scored == EvalCounts(tool_selection_accuracy=5)


def test_a_part_that_could_score_no_row_failed() -> None:
    unreachable = part(rag_doc({}, failed=3))
    assert unreachable.outcome == "Failed"
    assert unreachable.message is not None
    assert "agent_unreachable" in unreachable.message
    assert unreachable.rows == unreachable.failed_rows == 3
    every_case_errored = part(tsa_doc(passed=0, wrong=0, errors=2))
    assert every_case_errored.outcome == "Failed"


def test_means_are_weighted_by_scored_counts() -> None:
    parts = [
        part(rag_doc({"faithfulness": [1.0, 1.0, 1.0]}, shard="0/2")),
        part(rag_doc({"faithfulness": [0.5]}, failed=1, shard="1/2"), T2),
        part(tsa_doc(passed=17, wrong=3), T3),
    ]
    status = report({}, parts, RUN1)
    # (1.0 x 3 + 0.5 x 1) / 4, not the mean of the two shard means (0.75)
    assert status["scores"] == {"faithfulness": 0.875, "toolSelectionAccuracy": 0.85}
    assert status["scored"] == {"faithfulness": 4, "toolSelectionAccuracy": 20}
    assert (status["rows"], status["failedRows"]) == (3 + 2 + 20, 1)
    assert status["lastRunOutcome"] == "Succeeded"
    assert status["lastRunId"] == "job-1"
    assert status["lastRunTime"] == status["lastSuccessfulRunTime"] == T3
    assert (status["dataset"], status["split"]) == ("golden", "test")
    assert status["datasetSha256"] == "aa" * 32  # the golden dataset's, not the TSA cases'
    assert [p["name"] for p in status["currentRun"]["parts"]] == ["ragas-0", "ragas-1", "tsa-0"]


def test_a_run_is_complete_only_with_every_part() -> None:
    status = report({}, [part(rag_doc({"faithfulness": [1.0]}, shard="0/2"))], RUN1)
    assert status["currentRun"]["expectedParts"] == 3
    assert "lastRunId" not in status
    assert "scores" not in status


def test_a_missed_threshold_is_not_a_failed_run() -> None:
    low = part(rag_doc({"faithfulness": [0.1]}))
    assert low.outcome == "Succeeded"
    status = report({}, [low], RunContext("job-1", 1, "golden", "test"))
    assert status["lastRunOutcome"] == "Succeeded"
    assert status["scores"] == {"faithfulness": 0.1}


def good_status() -> dict[str, Any]:
    run = RunContext("job-1", 2, "golden", "test")
    parts = [part(rag_doc({"faithfulness": [0.9]})), part(tsa_doc(passed=9, wrong=1))]
    status = report({"observedGeneration": 4, "conditions": [{"type": "Ready"}]}, parts, run)
    assert status["lastRunOutcome"] == "Succeeded"
    return status


def test_failed_if_any_part_failed_and_the_last_scores_are_kept() -> None:
    before = good_status()
    run2 = RunContext("job-2", 2, "golden", "test")
    ok = part(rag_doc({"faithfulness": [0.2]}), T2)
    broken = failed_part("tsa", None, "tsa.jsonl:3: field 'query': missing", finished_at=T3)
    after = report(before, [ok, broken], run2)
    assert after["lastRunId"] == "job-2"
    assert after["lastRunOutcome"] == "Failed"
    assert after["lastRunTime"] == T3
    assert after["lastRunMessage"] == (
        "1 of 2 parts failed: tsa-0: tsa.jsonl:3: field 'query': missing"
    )
    # scores, counts, labels and the success time stay those of job-1
    for key in ("scores", "scored", "rows", "failedRows", "dataset", "split", "datasetSha256"):
        assert after[key] == before[key], key
    assert after["scores"]["faithfulness"] == 0.9
    assert after["lastSuccessfulRunTime"] == T1
    # the operator's fields are untouched
    assert after["observedGeneration"] == 4
    assert after["conditions"] == [{"type": "Ready"}]


def test_a_new_run_id_resets_current_run() -> None:
    half = report({}, [part(rag_doc({"faithfulness": [1.0]}))], RunContext("job-1", 2))
    assert len(half["currentRun"]["parts"]) == 1
    status = next_status(half, part(tsa_doc(passed=1, wrong=0)), RunContext("job-2", 2))
    assert status["currentRun"]["id"] == "job-2"
    assert [p["name"] for p in status["currentRun"]["parts"]] == ["tsa-0"]
    assert "lastRunId" not in status  # job-1 never completed; job-2 not yet


def test_a_retried_part_replaces_its_earlier_report() -> None:
    run = RunContext("job-1", 1, "golden", "test")
    failed = report({}, [failed_part("ragas", None, "judge down", finished_at=T1)], run)
    assert failed["lastRunOutcome"] == "Failed"
    retried = next_status(failed, part(rag_doc({"faithfulness": [0.8]}), T2), run)
    assert len(retried["currentRun"]["parts"]) == 1
    assert retried["lastRunOutcome"] == "Succeeded"
    assert retried["scores"] == {"faithfulness": 0.8}
    assert retried["lastRunMessage"] == "1 part, 1 rows and TSA cases, 0 failed"


def test_empty_shards_succeed_but_a_run_that_scored_nothing_fails() -> None:
    empty = part(rag_doc({}, shard="3/4"))
    assert (empty.outcome, empty.rows, empty.message) == ("Succeeded", 0, "this shard drew no rows")
    status = report({}, [empty], RunContext("job-1", 1, "golden", "test"))
    assert status["lastRunOutcome"] == "Failed"
    assert "scores" not in status


def test_a_metric_no_longer_scored_leaves_the_scores() -> None:
    before = good_status()
    run2 = RunContext("job-2", 1, "golden", "test")
    after = next_status(before, part(rag_doc({"context_recall": [0.7]}), T2), run2)
    assert after["scores"] == {"contextRecall": 0.7}
    patch = merge_patch(before, after)
    assert patch["scores"] == {
        "faithfulness": None,
        "toolSelectionAccuracy": None,
        "contextRecall": 0.7,
    }
    assert "conditions" not in patch
    assert "observedGeneration" not in patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies it."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


def test_the_merge_patch_turns_the_old_status_into_the_new() -> None:
    before = good_status()
    run2 = RunContext("job-2", 2, "golden", "test")
    for after in (
        next_status(before, part(rag_doc({"noise_sensitivity": [0.1]}), T2), run2),
        report(before, [part(rag_doc({"noise_sensitivity": [0.1]})), part(tsa_doc(1, 1))], run2),
        report(
            before, [failed_part("ragas", "0/1", "x", finished_at=T2), part(tsa_doc(1, 0))], run2
        ),
    ):
        assert apply_merge_patch(before, merge_patch(before, after)) == after


def test_long_messages_are_cut_to_what_the_crd_takes() -> None:
    p = failed_part("ragas", "2/3", "e" * 5000, finished_at=T1)
    assert (p.name, p.shard) == ("ragas-2", "2/3")
    assert p.message is not None
    assert len(p.message) == 1024
    status = report(
        {}, [p, failed_part("tsa", "2/3", "f" * 5000, finished_at=T1)], RunContext("j", 2)
    )
    assert len(status["lastRunMessage"]) == 2048


def test_status_target() -> None:
    assert str(StatusTarget.parse("team-a/nightly")) == "team-a/nightly"
    for bad in ("nightly", "/x", "a/", "a/b/c"):
        with pytest.raises(ValueError, match="NAMESPACE/NAME"):
            StatusTarget.parse(bad)


def test_bad_status_flags_are_refused_before_any_work(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["eval", "tsa", "--router", "--no-progress"]
    with pytest.raises(SystemExit) as exit_info:
        main([*base, "--status", "nightly"])
    assert exit_info.value.code == 2
    assert "--status 'nightly': expected NAMESPACE/NAME" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--status", "ns/x", "--expect-parts", "0"])
    assert "expected a whole number >= 1" in capsys.readouterr().err
    assert main([*base, "--status", "ns/x", "--expect-parts", "2"]) == 2
    err = capsys.readouterr().err
    assert "--expect-parts 2 needs --run-id" in err


def test_credentials_are_found_or_the_error_says_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # in a pod without a mounted token (automountServiceAccountToken false)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(StatusError, match="no Kubernetes credentials"):
        api_client(None)
    # --kubeconfig wins over the in-cluster config, and a missing file is named
    missing = tmp_path / "nope.yaml"
    with pytest.raises(StatusError, match="no Kubernetes credentials"):
        api_client(str(missing))
    args = ["eval", "tsa", "--router", "--no-progress", "--status", "ns/x", "--run-id", "j"]
    assert main(args) == 3
    assert "sleuth eval: error: EvalSchedule ns/x: no Kubernetes credentials" in (
        capsys.readouterr().err
    )
