"""promtool unit tests of the rendered EvalSchedule alerts (Debian's promtool).

For every alert and two specs (the seed defaults, and shorter windows with other thresholds):
a score that drops below its threshold and stays there fires (and only after the average has been
low for ``for``); a short dip below the threshold, or a score above it, never fires.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import SCORE_ALERTS, ScoreAlert, render_eval_rules

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool is not installed"),
]

OWNER = Owner(kind="EvalSchedule", name="nightly", namespace="team-a", uid="uid")
BASE: dict[str, Any] = {
    "agentRef": {"name": "contracts"},
    "schedule": "0 3 * * *",
    "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    "metrics": [a.metric for a in SCORE_ALERTS],
}
SPECS: dict[str, dict[str, Any]] = {
    "seed-defaults": {},
    "short-windows": {
        "alerts": {"window": "10m", "for": "4m", "severity": "critical"},
        "thresholds": {
            "faithfulness": 0.9,
            "answerRelevancy": 0.5,
            "contextPrecision": 0.4,
            "contextRecall": 0.8,
            "toolSelectionAccuracy": 0.95,
        },
    },
}


def _minutes(duration: str) -> int:
    assert duration.endswith("m"), duration
    return int(duration[:-1])


def _series(alert: ScoreAlert) -> str:
    labels = {
        "namespace": OWNER.namespace,
        "agent": "contracts",
        "eval_schedule": OWNER.name,
        **dict(alert.extra_selector),
    }
    inner = ", ".join(f'{k}="{v}"' for k, v in labels.items())
    return f"{alert.series}{{{inner}}}"


def _values(*runs: tuple[float, int]) -> str:
    """promtool's expanding notation: each (value, minutes) run of a constant value."""
    return " ".join(f"{value:.2f}+0x{count - 1}" for value, count in runs)


def _cases(spec: EvalScheduleSpec, rule: dict[str, Any], alert: ScoreAlert) -> list[Any]:
    window, hold = _minutes(spec.alerts.window), _minutes(spec.alerts.for_)
    threshold = alert.threshold(spec.thresholds)
    margin = min(0.1, 1.0 - threshold, threshold)  # symmetric: the average crosses at half
    high, low = threshold + margin, threshold - margin
    step = 2 * window  # the score drops at this minute and stays low
    series = _series(alert)
    fired = {
        "exp_labels": {
            "namespace": OWNER.namespace,
            "agent": "contracts",
            "eval_schedule": OWNER.name,
            "severity": spec.alerts.severity,
            **dict(alert.extra_selector),
        },
        "exp_annotations": {
            **rule["annotations"],
            "description": rule["annotations"]["description"].replace(
                '{{ $value | printf "%.3f" }}', f"{low:.3f}"
            ),
        },
    }
    name = alert.alert
    sustained = {
        "interval": "1m",
        "input_series": [{"series": series, "values": _values((high, step), (low, 6 * window))}],
        "alert_rule_test": [
            # the average is not below yet (less than half the window is low)
            {"eval_time": f"{step + window // 3}m", "alertname": name, "exp_alerts": []},
            # below, but for less than `for`: pending, not firing
            {
                "eval_time": f"{step + window // 2 + hold // 2 + 1}m",
                "alertname": name,
                "exp_alerts": [],
            },
            # the whole window is low and has been for longer than `for`: firing
            {"eval_time": f"{step + window + hold + 1}m", "alertname": name, "exp_alerts": [fired]},
        ],
    }
    dip = max(window // 6, 1)
    short_dip = {
        "interval": "1m",
        "input_series": [
            {"series": series, "values": _values((high, step), (low, dip), (high, 6 * window))}
        ],
        "alert_rule_test": [
            {"eval_time": f"{step + m}m", "alertname": name, "exp_alerts": []}
            for m in range(0, 3 * window, max(window // 5, 1))
        ],
    }
    above = {
        "interval": "1m",
        "input_series": [{"series": series, "values": _values((high, 6 * window))}],
        "alert_rule_test": [
            {"eval_time": f"{m}m", "alertname": name, "exp_alerts": []}
            for m in (window, 2 * window + hold, 5 * window)
        ],
    }
    return [sustained, short_dip, above]


@pytest.mark.parametrize("alert", SCORE_ALERTS, ids=lambda a: a.alert)
@pytest.mark.parametrize("variant", list(SPECS))
def test_rule_fires_only_when_low_long_enough(
    tmp_path: Path, variant: str, alert: ScoreAlert
) -> None:
    spec = EvalScheduleSpec.model_validate({**BASE, **SPECS[variant]})
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rendered["spec"]), encoding="utf-8")
    rule = next(r for r in rendered["spec"]["groups"][0]["rules"] if r["alert"] == alert.alert)
    tests_file = tmp_path / "tests.yaml"
    tests_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules_file.name],
                "evaluation_interval": "1m",
                "tests": _cases(spec, rule, alert),
            }
        ),
        encoding="utf-8",
    )
    check = subprocess.run(
        [PROMTOOL, "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    run = subprocess.run(
        [PROMTOOL, "test", "rules", tests_file.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_catches_a_wrong_expectation(tmp_path: Path) -> None:
    """The harness can fail: expecting no alert on a sustained low score is reported."""
    spec = EvalScheduleSpec.model_validate(BASE)
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rendered["spec"]), encoding="utf-8")
    alert = SCORE_ALERTS[0]
    rule = rendered["spec"]["groups"][0]["rules"][0]
    sustained = _cases(spec, rule, alert)[0]
    sustained["alert_rule_test"][-1]["exp_alerts"] = []
    (tmp_path / "tests.yaml").write_text(
        yaml.safe_dump(
            {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [sustained]}
        ),
        encoding="utf-8",
    )
    run = subprocess.run(
        [PROMTOOL, "test", "rules", "tests.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0
    assert "RAGFaithfulnessLow" in run.stdout + run.stderr
