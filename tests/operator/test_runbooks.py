"""Every alert an EvalSchedule renders links a runbook page that exists and says what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import SCORE_ALERTS, render_eval_rules

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
RUNBOOKS = ROOT / "docs" / "runbooks"
OWNER = Owner(kind="EvalSchedule", name="nightly", namespace="team-a", uid="uid")


def _rules() -> list[dict[str, object]]:
    spec = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "contracts"},
            "schedule": "0 3 * * *",
            "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            "metrics": [a.metric for a in SCORE_ALERTS],
        }
    )
    rules: list[dict[str, object]] = render_eval_rules(OWNER, spec, RenderSettings())["spec"][
        "groups"
    ][0]["rules"]
    return rules


def test_every_score_is_alerted() -> None:
    assert [r["alert"] for r in _rules()] == [a.alert for a in SCORE_ALERTS]


@pytest.mark.parametrize("alert", [a.alert for a in SCORE_ALERTS])
def test_alert_runbook_exists_and_says_what_to_do(alert: str) -> None:
    rule = next(r for r in _rules() if r["alert"] == alert)
    annotations = rule["annotations"]
    assert isinstance(annotations, dict)
    assert annotations["runbook_url"].endswith(f"/docs/runbooks/{alert}.md")
    page = RUNBOOKS / f"{alert}.md"
    assert page.is_file(), f"{page} is missing"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {alert}\n")
    for section in ("## What it means", "## What to check", "## What to change"):
        assert section in text, f"{page}: no {section!r} section"
    assert f"({alert}.md)" in (RUNBOOKS / "README.md").read_text(encoding="utf-8")


def test_runbook_thresholds_are_the_seed_defaults() -> None:
    """The default threshold each page and the index state is the one the alert uses."""
    index = (RUNBOOKS / "README.md").read_text(encoding="utf-8")
    for rule in _rules():
        threshold = str(rule["expr"]).rsplit("<", 1)[1].strip()
        row = next(line for line in index.splitlines() if f"[{rule['alert']}]" in line)
        assert f"{float(threshold):.2f}" in row, row
        page = (RUNBOOKS / f"{rule['alert']}.md").read_text(encoding="utf-8")
        assert f"default {float(threshold):.2f}" in page, rule["alert"]
