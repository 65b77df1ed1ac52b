"""Every alert an EvalSchedule can render links a runbook page that exists and says what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import ALERT_NAMES, SCORE_ALERTS, render_eval_rules

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS = ROOT / "docs" / "runbooks"
OWNER = Owner(kind="EvalSchedule", name="nightly", namespace="team-a", uid="uid")


def _rules(**over: Any) -> list[dict[str, Any]]:
    """The rules of a spec with every alert on (all metrics, online scores, not suspended)."""
    spec = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "contracts"},
            "schedule": "0 3 * * *",
            "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            "metrics": [a.metric for a in SCORE_ALERTS],
            "toolSelection": {"configMapRef": {"name": "tsa", "key": "tsa.jsonl"}},
            **over,
        }
    )
    rules: list[dict[str, Any]] = render_eval_rules(OWNER, spec, RenderSettings())["spec"][
        "groups"
    ][0]["rules"]
    return rules


def test_every_alert_the_operator_can_render_is_listed() -> None:
    """ALERT_NAMES (what the pages are checked for) is exactly what the renderer can emit."""
    assert {str(r["alert"]) for r in _rules()} == set(ALERT_NAMES)
    without_online = [r["alert"] for r in _rules(alerts={"onlineScores": False})]
    assert without_online == list(ALERT_NAMES)


@pytest.mark.parametrize("alert", ALERT_NAMES)
def test_alert_runbook_exists_and_says_what_to_do(alert: str) -> None:
    rules = [r for r in _rules() if r["alert"] == alert]
    assert rules, f"{alert} is not rendered"
    for rule in rules:  # the online twin links the same page
        annotations = rule["annotations"]
        assert set(annotations) == {"summary", "description", "runbook_url"}
        assert annotations["runbook_url"].endswith(f"/docs/runbooks/{alert}.md")
        assert annotations["summary"]
        assert annotations["description"]
    page = RUNBOOKS / f"{alert}.md"
    assert page.is_file(), f"{page} is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {alert}\n")
    for section in ("## What it means", "## What to check", "## What to change"):
        assert section in text, f"{page}: no {section!r} section"
    assert f"({alert}.md)" in (RUNBOOKS / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("alert", ["RAGFaithfulnessLow", "RAGAnswerRelevancyLow"])
def test_pages_of_online_alerts_tell_the_sources_apart(alert: str) -> None:
    assert any(r["labels"].get("source") == "online" for r in _rules() if r["alert"] == alert)
    text = (RUNBOOKS / f"{alert}.md").read_text(encoding="utf-8")
    assert 'source="online"' in text
    assert "sleuth_agent_online_eval_dropped_total" in text


def test_run_pages_name_the_status_fields_and_commands() -> None:
    failing = (RUNBOOKS / "RAGEvalFailing.md").read_text(encoding="utf-8")
    stale = (RUNBOOKS / "RAGEvalStale.md").read_text(encoding="utf-8")
    for text in (failing, stale):
        assert "create job --from=cronjob/<name>-eval" in text
        assert "currentRun" in text
    assert "lastRunMessage" in failing
    assert "auth can-i patch evalschedules/<name> --subresource=status" in failing
    assert "spec.alerts.staleAfter" in stale


def test_runbook_thresholds_are_the_seed_defaults() -> None:
    """The default threshold each page and the index state is the one the alert uses."""
    index = (RUNBOOKS / "README.md").read_text(encoding="utf-8")
    score_alerts = {a.alert for a in SCORE_ALERTS}
    checked = set()
    for rule in _rules():
        if rule["alert"] not in score_alerts:
            continue
        threshold = str(rule["expr"]).rsplit("<", 1)[1].strip()
        row = next(line for line in index.splitlines() if f"[{rule['alert']}]" in line)
        assert f"{float(threshold):.2f}" in row, row
        page = (RUNBOOKS / f"{rule['alert']}.md").read_text(encoding="utf-8")
        assert f"default {float(threshold):.2f}" in page, rule["alert"]
        checked.add(rule["alert"])
    assert checked == score_alerts
