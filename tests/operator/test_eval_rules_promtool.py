"""promtool unit tests of every rendered EvalSchedule alert (Debian's promtool).

For every score alert and two specs (the seed defaults, and shorter windows with other
thresholds): a score that drops below its threshold and stays there fires (and only after the
average has been low for ``for``); a short dip below the threshold, or a score above it, never
fires. The same for the online twins of faithfulness and answer relevancy, over the average of the
agent's pods (and never when ``onlineScores`` is off). RAGEvalFailing and RAGEvalStale:
test_eval_rules_promtool_runs.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import RenderSettings
from sleuth.operator.render.evalrules import SCORE_ALERTS, ScoreAlert, render_eval_rules
from tests.operator.promtool_kit import (
    BASE,
    NEEDS_PROMTOOL,
    OWNER,
    PROMTOOL,
    SPECS,
    rule_of,
    run_promtool,
)

pytestmark = [pytest.mark.integration, NEEDS_PROMTOOL]


def _minutes(duration: str) -> int:
    assert duration.endswith("m"), duration
    return int(duration[:-1])


# The labels the operator exports a score with (besides namespace, agent, eval_schedule).
EXPORTED = {"dataset": "golden", "split": "test", "source": "eval"}


def _series(alert: ScoreAlert) -> str:
    labels = {
        "namespace": OWNER.namespace,
        "agent": "contracts",
        "eval_schedule": OWNER.name,
        **EXPORTED,
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
            **EXPORTED,
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
    rule = rule_of(rendered, alert.alert)
    run_promtool(tmp_path, rendered, _cases(spec, rule, alert))


def test_promtool_catches_a_wrong_expectation(tmp_path: Path) -> None:
    """The harness can fail: expecting no alert on a sustained low score is reported."""
    spec = EvalScheduleSpec.model_validate(BASE)
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rendered["spec"]), encoding="utf-8")
    alert = SCORE_ALERTS[0]
    rule = rule_of(rendered, alert.alert)
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


ONLINE_ALERTS = [a for a in SCORE_ALERTS if a.online]


def _online_cases(spec: EvalScheduleSpec, rule: dict[str, Any], alert: ScoreAlert) -> list[Any]:
    """Two agent pods export the online score; the alert watches their average."""
    window, hold = _minutes(spec.alerts.window), _minutes(spec.alerts.for_)
    threshold = alert.threshold(spec.thresholds)
    margin = min(0.1, 1.0 - threshold, threshold)
    high, low = threshold + margin, threshold - margin
    step, name = 2 * window, alert.alert

    def pod(name: str) -> str:
        return (
            f'{alert.series}{{namespace="{OWNER.namespace}", agent="contracts", '
            f'source="online", pod="{name}"}}'
        )

    fired = {
        "exp_labels": {
            "namespace": OWNER.namespace,
            "agent": "contracts",
            "eval_schedule": OWNER.name,
            "severity": spec.alerts.severity,
            "source": "online",
        },
        "exp_annotations": {
            **rule["annotations"],
            "description": rule["annotations"]["description"].replace(
                '{{ $value | printf "%.3f" }}', f"{low:.3f}"
            ),
        },
    }
    both_low = {
        "interval": "1m",
        "input_series": [
            {"series": pod(p), "values": _values((high, step), (low, 6 * window))}
            for p in ("a", "b")
        ],
        "alert_rule_test": [
            {"eval_time": f"{step + window // 3}m", "alertname": name, "exp_alerts": []},
            {
                "eval_time": f"{step + window // 2 + hold // 2 + 1}m",
                "alertname": name,
                "exp_alerts": [],
            },
            {"eval_time": f"{step + window + hold + 1}m", "alertname": name, "exp_alerts": [fired]},
        ],
    }
    # One pod low, the other high enough that their average stays above the threshold.
    one_low = {
        "interval": "1m",
        "input_series": [
            {"series": pod("a"), "values": _values((threshold - 0.04, 8 * window))},
            {"series": pod("b"), "values": _values((threshold + 0.08, 8 * window))},
        ],
        "alert_rule_test": [
            {"eval_time": f"{m}m", "alertname": name, "exp_alerts": []}
            for m in (window, 2 * window + hold, 5 * window)
        ],
    }
    dip = max(window // 6, 1)
    short_dip = {
        "interval": "1m",
        "input_series": [
            {"series": pod(p), "values": _values((high, step), (low, dip), (high, 6 * window))}
            for p in ("a", "b")
        ],
        "alert_rule_test": [
            {"eval_time": f"{step + m}m", "alertname": name, "exp_alerts": []}
            for m in range(0, 3 * window, max(window // 5, 1))
        ],
    }
    return [both_low, one_low, short_dip]


@pytest.mark.parametrize("alert", ONLINE_ALERTS, ids=lambda a: a.alert)
@pytest.mark.parametrize("variant", list(SPECS))
def test_online_twin_fires_only_when_the_pods_average_is_low_long_enough(
    tmp_path: Path, variant: str, alert: ScoreAlert
) -> None:
    spec = EvalScheduleSpec.model_validate({**BASE, **SPECS[variant]})
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    run_promtool(
        tmp_path, rendered, _online_cases(spec, rule_of(rendered, alert.alert, "online"), alert)
    )


def test_online_scores_off_never_alert_on_live_traffic(tmp_path: Path) -> None:
    on = EvalScheduleSpec.model_validate(BASE)
    alerts = SPECS["seed-defaults"].get("alerts", {})
    off = EvalScheduleSpec.model_validate({**BASE, "alerts": {**alerts, "onlineScores": False}})
    rendered_on = render_eval_rules(OWNER, on, RenderSettings())
    rendered = render_eval_rules(OWNER, off, RenderSettings())
    for alert in ONLINE_ALERTS:
        sustained = _online_cases(on, rule_of(rendered_on, alert.alert, "online"), alert)[0]
        for check in sustained["alert_rule_test"]:
            check["exp_alerts"] = []
        run_promtool(tmp_path, rendered, [sustained])
