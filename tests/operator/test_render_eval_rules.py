"""The PrometheusRule an EvalSchedule renders: score alerts on scheduled runs and their online
twins, RAGEvalFailing and RAGEvalStale (the golden file is checked in test_render_eval.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import ALERT_NAMES, SCORE_ALERTS, render_eval_rules

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
OWNER = Owner(kind="EvalSchedule", name="contracts-nightly", namespace="team-a", uid="uid-nightly")
SPEC: dict[str, Any] = {
    "agentRef": {"name": "contracts"},
    "schedule": "0 */6 * * *",
    "dataset": {"configMapRef": {"name": "contracts-golden", "key": "golden_contracts.jsonl"}},
    "metrics": [
        "faithfulness",
        "answerRelevancy",
        "contextPrecision",
        "contextRecall",
        "toolSelectionAccuracy",
    ],
    "toolSelection": {"configMapRef": {"name": "contracts-tsa", "key": "tsa_cases.jsonl"}},
}


def _spec(**over: Any) -> EvalScheduleSpec:
    merged = {**SPEC, **over}
    if "toolSelectionAccuracy" not in merged["metrics"]:
        merged.pop("toolSelection")
    return EvalScheduleSpec.model_validate(merged)


def _eval_rules(spec: EvalScheduleSpec) -> dict[str, dict[str, Any]]:
    """The rules by alert name; the online twin of an alert under ``<alert>/online``."""
    rules = render_eval_rules(OWNER, spec, SETTINGS)["spec"]["groups"][0]["rules"]
    out: dict[str, dict[str, Any]] = {}
    for rule in rules:
        key = rule["alert"] + ("/online" if rule["labels"].get("source") == "online" else "")
        assert key not in out, f"{key} rendered twice"
        out[key] = rule
    return out


def test_faithfulness_alert_is_the_seed_rule() -> None:
    rules = _eval_rules(_spec())
    rule = rules["RAGFaithfulnessLow"]
    assert rule["expr"] == (
        'avg_over_time(rag_faithfulness_score{namespace="team-a", agent="contracts", '
        'eval_schedule="contracts-nightly", source!="online"}[30m]) < 0.8'
    )
    assert rule["for"] == "10m"
    assert rule["labels"]["severity"] == "warning"
    assert rule["annotations"]["runbook_url"].endswith("/docs/runbooks/RAGFaithfulnessLow.md")
    assert set(rules) == {
        *(a.alert for a in SCORE_ALERTS),
        "RAGFaithfulnessLow/online",
        "RAGAnswerRelevancyLow/online",
        "RAGEvalFailing",
        "RAGEvalStale",
    }
    assert set(ALERT_NAMES) == {key.split("/")[0] for key in rules}
    assert 'form="simple"' in rules["RAGContextPrecisionLow"]["expr"]
    for rule in rules.values():
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
        assert rule["annotations"]["runbook_url"].endswith(f"/{rule['alert']}.md")
        assert rule["labels"]["eval_schedule"] == "contracts-nightly"
    assert rules["AgentToolSelectionAccuracyLow"]["expr"].startswith(
        "avg_over_time(agent_tool_selection_accuracy{"
    )


def test_thresholds_and_windows_come_from_the_spec() -> None:
    spec = _spec(
        thresholds={"faithfulness": 0.9},
        alerts={"window": "1m", "for": "30s"},
        metrics=["faithfulness"],
    )
    rules = render_eval_rules(OWNER, spec, SETTINGS)["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [
        "RAGFaithfulnessLow",
        "RAGFaithfulnessLow",
        "RAGEvalFailing",
        "RAGEvalStale",
    ]
    for rule in rules[:2]:
        assert rule["expr"].endswith("[1m])) < 0.9" if "avg by" in rule["expr"] else "[1m]) < 0.9")
        assert rule["for"] == "30s"


def test_online_twins_watch_the_agents_live_scores() -> None:
    rules = _eval_rules(_spec())
    online = rules["RAGFaithfulnessLow/online"]
    assert online["expr"] == (
        "avg by (namespace, agent) (avg_over_time(rag_faithfulness_score{"
        'namespace="team-a", agent="contracts", source="online"}[30m])) < 0.8'
    )
    assert online["for"] == "10m"
    assert online["labels"] == {
        "severity": "warning",
        "eval_schedule": "contracts-nightly",
        "source": "online",
    }
    relevancy = rules["RAGAnswerRelevancyLow/online"]["expr"]
    assert (
        'rag_answer_relevancy_score{namespace="team-a", agent="contracts", source="online"}'
        in relevancy
    )
    assert relevancy.endswith("[30m])) < 0.7")
    for alert in ("RAGContextPrecisionLow", "RAGContextRecallLow", "AgentToolSelectionAccuracyLow"):
        assert 'source!="online"' in rules[alert]["expr"]
        assert f"{alert}/online" not in rules
    off = _eval_rules(_spec(alerts={"onlineScores": False}))
    assert not [key for key in off if key.endswith("/online")]
    assert "RAGFaithfulnessLow" in off


def test_failing_alert_reads_the_last_run_outcome() -> None:
    rule = _eval_rules(_spec())["RAGEvalFailing"]
    assert rule["expr"] == (
        'sleuth_eval_last_run_failed{namespace="team-a", agent="contracts", '
        'eval_schedule="contracts-nightly"} == 1'
    )
    assert "lastRunMessage" in rule["annotations"]["description"]


@pytest.mark.parametrize(
    ("over", "seconds"),
    [
        ({}, 43200),  # every 6 hours: stale after 12h
        ({"schedule": "0 3 * * *"}, 172800),
        ({"schedule": "30 2 * * 1-5"}, 2 * 3 * 86400),  # Friday to Monday
        ({"alerts": {"staleAfter": "90m"}}, 5400),
        ({"schedule": "0 0 30 2 *", "alerts": {"staleAfter": "2d"}}, 172800),
    ],
)
def test_stale_alert_waits_two_schedule_gaps_or_stale_after(
    over: dict[str, Any], seconds: int
) -> None:
    rule = _eval_rules(_spec(**over))["RAGEvalStale"]
    assert rule["expr"] == (
        'time() - sleuth_eval_last_success_timestamp_seconds{namespace="team-a", '
        f'agent="contracts", eval_schedule="contracts-nightly"}} > {seconds}'
    )


def test_no_stale_alert_while_suspended_or_when_the_schedule_never_fires() -> None:
    assert "RAGEvalStale" not in _eval_rules(_spec(suspend=True))
    assert "RAGEvalFailing" in _eval_rules(_spec(suspend=True))
    assert "RAGEvalStale" not in _eval_rules(_spec(schedule="0 0 30 2 *"))
