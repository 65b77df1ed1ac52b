"""The EvalSchedule results collector: what a scrape of the operator shows for a given status."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from sleuth.operator.evalmetrics import EvalMetrics
from tests.support.metrics import Samples, parse_samples

pytestmark = pytest.mark.unit

CREATED = "2026-11-01T08:00:00Z"
SCHEDULE: dict[str, Any] = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {
        "name": "bot-nightly",
        "namespace": "team-a",
        "uid": "uid-1",
        "generation": 1,
        "creationTimestamp": CREATED,
    },
    "spec": {"agentRef": {"name": "bot"}, "schedule": "0 3 * * *"},
}
SUCCEEDED: dict[str, Any] = {
    "observedGeneration": 1,
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Scheduled",
            "message": "CronJob bot-nightly-eval runs at '0 3 * * *'",
            "lastTransitionTime": CREATED,
            "observedGeneration": 1,
        }
    ],
    "lastRunId": "bot-nightly-eval-29000000",
    "lastRunTime": "2026-11-28T03:04:05Z",
    "lastRunOutcome": "Succeeded",
    "lastSuccessfulRunTime": "2026-11-28T03:04:05Z",
    "scores": {
        "faithfulness": 0.75,
        "answerRelevancy": 0.81,
        "contextPrecision": 0.6,
        "contextRecall": 0.7,
        "toolSelectionAccuracy": 0.9,
    },
    "scored": {"faithfulness": 40, "toolSelectionAccuracy": 20},
    "rows": 60,
    "failedRows": 2,
    "dataset": "golden",
    "split": "test",
    "datasetSha256": "ab" * 32,
    "currentRun": {"id": "bot-nightly-eval-29000000", "expectedParts": 1, "parts": []},
}
BASE = (("namespace", "team-a"), ("agent", "bot"), ("eval_schedule", "bot-nightly"))
SCORE = (*BASE, ("dataset", "golden"), ("split", "test"), ("source", "eval"))


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=UTC).timestamp()


def _with(status: dict[str, Any] | None, **meta: Any) -> dict[str, Any]:
    obj = copy.deepcopy(SCHEDULE)
    obj["metadata"].update(meta)
    if status is not None:
        obj["status"] = copy.deepcopy(status)
    return obj


def scrape(collector: EvalMetrics) -> Samples:
    registry = CollectorRegistry()
    registry.register(collector)
    return parse_samples(generate_latest(registry).decode())


def key(name: str, *labels: tuple[str, str]) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset(labels))


def test_a_successful_run_is_exported_with_its_labels() -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED))
    assert scrape(collector) == {
        key("rag_faithfulness_score", *SCORE): 0.75,
        key("rag_answer_relevancy_score", *SCORE): 0.81,
        key("rag_context_precision_score", *SCORE, ("form", "simple")): 0.6,
        key("rag_context_recall_score", *SCORE): 0.7,
        key("agent_tool_selection_accuracy", *SCORE): 0.9,
        key("sleuth_eval_last_run_timestamp_seconds", *BASE): _ts("2026-11-28T03:04:05Z"),
        key("sleuth_eval_last_success_timestamp_seconds", *BASE): _ts("2026-11-28T03:04:05Z"),
        key("sleuth_eval_last_run_failed", *BASE): 0.0,
        key("sleuth_eval_last_run_rows", *BASE): 60.0,
        key("sleuth_eval_last_run_failed_rows", *BASE): 2.0,
    }  # noise sensitivity was not scored: no series


def test_before_any_run_success_is_the_creation_time_and_nothing_failed() -> None:
    collector = EvalMetrics()
    collector.observe(_with(None))
    assert scrape(collector) == {
        key("sleuth_eval_last_success_timestamp_seconds", *BASE): _ts(CREATED),
        key("sleuth_eval_last_run_failed", *BASE): 0.0,
    }


def test_a_failed_run_keeps_the_last_success_and_its_scores() -> None:
    failed = copy.deepcopy(SUCCEEDED)
    failed.update(
        lastRunId="bot-nightly-eval-29001440",
        lastRunTime="2026-11-29T03:10:00Z",
        lastRunOutcome="Failed",
        lastRunMessage="ragas-0: the agent answered 503 to every question",
    )
    collector = EvalMetrics()
    collector.observe(_with(failed))
    samples = scrape(collector)
    assert samples[key("sleuth_eval_last_run_failed", *BASE)] == 1.0
    assert samples[key("sleuth_eval_last_run_timestamp_seconds", *BASE)] == _ts(
        "2026-11-29T03:10:00Z"
    )
    assert samples[key("sleuth_eval_last_success_timestamp_seconds", *BASE)] == _ts(
        "2026-11-28T03:04:05Z"
    )
    assert samples[key("rag_faithfulness_score", *SCORE)] == 0.75


def test_a_failed_first_run_still_counts_staleness_from_creation() -> None:
    collector = EvalMetrics()
    collector.observe(
        _with({"lastRunTime": "2026-11-02T03:00:00Z", "lastRunOutcome": "Failed", "rows": 0})
    )
    samples = scrape(collector)
    assert samples[key("sleuth_eval_last_success_timestamp_seconds", *BASE)] == _ts(CREATED)
    assert samples[key("sleuth_eval_last_run_failed", *BASE)] == 1.0
    assert not any(name.startswith("rag_") for name, _ in samples)


def test_a_newer_status_replaces_the_values() -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED))
    lower = copy.deepcopy(SUCCEEDED)
    lower["scores"]["faithfulness"] = 0.42
    lower["dataset"] = "golden-v2"
    collector.observe(_with(lower))
    samples = scrape(collector)
    renamed = (*BASE, ("dataset", "golden-v2"), ("split", "test"), ("source", "eval"))
    assert samples[key("rag_faithfulness_score", *renamed)] == 0.42
    assert key("rag_faithfulness_score", *SCORE) not in samples  # no stale dataset label


def test_schedules_are_told_apart_by_namespace_and_name() -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED))
    collector.observe(_with(SUCCEEDED, namespace="team-b", uid="uid-2"))
    collector.observe(_with(None, name="bot-hourly", uid="uid-3"))
    failed = {
        dict(labels)["namespace"] + "/" + dict(labels)["eval_schedule"]: value
        for (name, labels), value in scrape(collector).items()
        if name == "sleuth_eval_last_run_failed"
    }
    assert failed == {"team-a/bot-nightly": 0, "team-b/bot-nightly": 0, "team-a/bot-hourly": 0}


def test_forget_removes_every_series_of_that_schedule_only() -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED))
    collector.observe(_with(SUCCEEDED, name="other", uid="uid-2"))
    collector.forget("team-a", "bot-nightly", "uid-1")
    schedules = {dict(labels)["eval_schedule"] for _, labels in scrape(collector)}
    assert schedules == {"other"}


def test_a_late_delete_of_an_old_object_spares_its_recreated_namesake() -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED, uid="uid-new"))
    collector.forget("team-a", "bot-nightly", "uid-old")
    assert scrape(collector)[key("rag_faithfulness_score", *SCORE)] == 0.75
    collector.forget("team-a", "bot-nightly")
    assert scrape(collector) == {}


def test_a_status_that_does_not_parse_keeps_the_previous_values(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collector = EvalMetrics()
    collector.observe(_with(SUCCEEDED))
    broken = copy.deepcopy(SUCCEEDED)
    broken["lastRunOutcome"] = "Exploded"
    collector.observe(_with(broken))
    assert scrape(collector)[key("sleuth_eval_last_run_failed", *BASE)] == 0.0
    assert "status results not exported" in caplog.text
    assert "lastRunOutcome" in caplog.text


def test_empty_families_are_described_before_any_schedule() -> None:
    registry = CollectorRegistry()
    registry.register(EvalMetrics())
    text = generate_latest(registry).decode()
    assert "# TYPE rag_faithfulness_score gauge" in text
    assert "# TYPE sleuth_eval_last_success_timestamp_seconds gauge" in text
