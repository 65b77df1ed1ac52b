"""The EvalSchedule spec model: defaults from the seed, cron and dataset validation, its CRD."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sleuth.core.api import crdgen
from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.core.api.v1alpha1.kinds import EVAL_SCHEDULE

pytestmark = pytest.mark.unit


def _spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "agentRef": {"name": "contracts"},
        "schedule": "0 */6 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    }
    return {**base, **over}


def test_defaults_are_the_seed_thresholds_and_windows() -> None:
    spec = EvalScheduleSpec.model_validate(_spec())
    wire = spec.to_wire()
    assert wire["thresholds"] == {
        "faithfulness": 0.80,
        "answerRelevancy": 0.70,
        "contextPrecision": 0.60,
        "contextRecall": 0.70,
        "toolSelectionAccuracy": 0.85,
    }
    assert wire["alerts"] == {
        "window": "30m",
        "for": "10m",
        "severity": "warning",
        "onlineScores": True,  # staleAfter: unset, derived from the schedule
    }
    assert wire["dataset"]["split"] == "test"
    assert "judge" not in wire  # defaults to the agent's own model server
    assert "noiseSensitivity" not in wire["metrics"]
    assert wire["suspend"] is False


def test_alert_windows_are_settable() -> None:
    spec = EvalScheduleSpec.model_validate(_spec(alerts={"window": "1m", "for": "30s"}))
    assert (spec.alerts.window, spec.alerts.for_) == ("1m", "30s")


def test_online_scores_and_stale_after_are_settable_and_checked() -> None:
    alerts = {"onlineScores": False, "staleAfter": "3d"}
    spec = EvalScheduleSpec.model_validate(_spec(alerts=alerts))
    assert (spec.alerts.online_scores, spec.alerts.stale_after) == (False, "3d")
    assert spec.to_wire()["alerts"]["staleAfter"] == "3d"
    with pytest.raises(ValueError, match="staleAfter"):
        EvalScheduleSpec.model_validate(_spec(alerts={"staleAfter": "3 days"}))
    with pytest.raises(ValidationError):
        EvalScheduleSpec.model_validate(_spec(alerts={"window": "30 minutes"}))


@pytest.mark.parametrize("schedule", ["0 */6 * * *", "*/15 * * * 1-5", "30 2 1,15 * sun"])
def test_valid_cron(schedule: str) -> None:
    assert EvalScheduleSpec.model_validate(_spec(schedule=schedule)).schedule == schedule


@pytest.mark.parametrize(
    "schedule", ["0 */6 * *", "0 0 * * * *", "@hourly", "61 * * * *", "0 24 * * *", "0 0 0 * *"]
)
def test_invalid_cron_is_refused(schedule: str) -> None:
    with pytest.raises(ValidationError, match="schedule"):
        EvalScheduleSpec.model_validate(_spec(schedule=schedule))


def test_dataset_needs_exactly_one_source() -> None:
    pvc = {"claimName": "evals", "path": "golden/contracts.jsonl"}
    both = {"configMapRef": {"name": "g", "key": "g.jsonl"}, "persistentVolumeClaim": pvc}
    with pytest.raises(ValidationError, match="exactly one"):
        EvalScheduleSpec.model_validate(_spec(dataset=both))
    with pytest.raises(ValidationError, match="exactly one"):
        EvalScheduleSpec.model_validate(_spec(dataset={"split": "dev"}))
    ok = EvalScheduleSpec.model_validate(_spec(dataset={"persistentVolumeClaim": pvc}))
    assert ok.dataset.persistent_volume_claim is not None


@pytest.mark.parametrize("path", ["../etc/passwd", "a/../../b", "/abs/golden.jsonl"])
def test_pvc_path_stays_inside_the_claim(path: str) -> None:
    with pytest.raises(ValidationError):
        EvalScheduleSpec.model_validate(
            _spec(dataset={"persistentVolumeClaim": {"claimName": "evals", "path": path}})
        )


def test_metrics_are_a_set_of_known_names() -> None:
    with pytest.raises(ValidationError):
        EvalScheduleSpec.model_validate(_spec(metrics=["faithfulness", "faithfulness"]))
    with pytest.raises(ValidationError):
        EvalScheduleSpec.model_validate(_spec(metrics=["bleu"]))
    with pytest.raises(ValidationError):
        EvalScheduleSpec.model_validate(_spec(metrics=[]))


def test_crd_columns_category_and_status() -> None:
    doc = crdgen.crd(EVAL_SCHEDULE)
    version = doc["spec"]["versions"][0]
    shown = [c["name"] for c in version["additionalPrinterColumns"] if not c.get("priority")]
    assert shown == ["Schedule", "Last Run", "Faithfulness", "TSA", "Ready", "Age"]
    assert doc["spec"]["names"]["categories"] == ["sleuth"]
    assert version["subresources"] == {"status": {}}
    schema = version["schema"]["openAPIV3Schema"]["properties"]
    assert schema["spec"]["properties"]["schedule"]["pattern"]
    assert "conditions" in schema["status"]["properties"]
    dataset_rules = schema["spec"]["properties"]["dataset"]["x-kubernetes-validations"]
    assert "configMapRef" in dataset_rules[0]["rule"]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"schedule": "*/0 * * * *"}, "a step"),
        ({"schedule": "0 */00 * * *"}, "a step"),
        ({"alerts": {"window": "0m"}}, "alerts.window"),
        ({"alerts": {"staleAfter": "0s"}}, "alerts.staleAfter"),
        (
            {"metrics": ["faithfulness"], "thresholds": {"contextRecall": 0.5}},
            "spec.thresholds.contextRecall: contextRecall is not in spec.metrics",
        ),
    ],
)
def test_what_prometheus_or_the_cronjob_would_refuse_is_refused(
    over: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        EvalScheduleSpec.model_validate(_spec(**over))


def test_a_default_threshold_of_an_unscored_metric_is_fine() -> None:
    # The apiserver fills in every default threshold: those cannot be told from the user's.
    spec = EvalScheduleSpec.model_validate(
        _spec(metrics=["faithfulness"], thresholds={"contextRecall": 0.7})
    )
    assert spec.thresholds.context_recall == 0.7
    assert EvalScheduleSpec.model_validate(_spec(schedule="*/05 * * * *"))


CASES = {"configMapRef": {"name": "team-tsa", "key": "tsa.jsonl"}}


def test_tsa_is_scored_only_on_the_teams_own_cases() -> None:
    """toolSelectionAccuracy is no default (the shipped cases measure sleuth's sample agent,
    not the team's): it is scored when listed, and then only with spec.toolSelection."""
    assert "toolSelectionAccuracy" not in EvalScheduleSpec.model_validate(_spec()).metrics
    scored = EvalScheduleSpec.model_validate(
        _spec(metrics=["faithfulness", "toolSelectionAccuracy"], toolSelection=CASES)
    )
    assert scored.tool_selection is not None
    assert scored.tool_selection.split == "test"
    with pytest.raises(ValidationError, match=r"spec\.toolSelection: toolSelectionAccuracy is"):
        EvalScheduleSpec.model_validate(_spec(metrics=["toolSelectionAccuracy"]))
    with pytest.raises(ValidationError, match=r"toolSelectionAccuracy is not in spec\.metrics"):
        EvalScheduleSpec.model_validate(_spec(toolSelection=CASES))
    with pytest.raises(ValidationError, match="exactly one of configMapRef"):
        EvalScheduleSpec.model_validate(
            _spec(metrics=["toolSelectionAccuracy"], toolSelection={"split": "dev"})
        )


def test_request_timeout_and_reports_are_bounded() -> None:
    spec = EvalScheduleSpec.model_validate(_spec(reports={"claimName": "eval-reports"}))
    assert (spec.request_timeout_seconds, spec.reports and spec.reports.keep_runs) == (120, 10)
    for bad in ({"requestTimeoutSeconds": 0}, {"reports": {"claimName": "r", "keepRuns": 0}}):
        with pytest.raises(ValidationError):
            EvalScheduleSpec.model_validate(_spec(**bad))
