"""promtool unit tests of every rendered EvalSchedule alert (Debian's promtool).

For every score alert and two specs (the seed defaults, and shorter windows with other
thresholds): a score that drops below its threshold and stays there fires (and only after the
average has been low for ``for``); a short dip below the threshold, or a score above it, never
fires. The same for the online twins of faithfulness and answer relevancy, over the average of the
agent's pods (and never when ``onlineScores`` is off). RAGEvalFailing fires while the last run
failed; RAGEvalStale fires once no run has succeeded for S, not before.
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
    rule = _rule(rendered, alert.alert)
    _promtool(tmp_path, rendered, _cases(spec, rule, alert))


def _rule(rendered: dict[str, Any], alert: str, source: str | None = None) -> dict[str, Any]:
    rules = rendered["spec"]["groups"][0]["rules"]
    found: dict[str, Any] = next(
        r for r in rules if r["alert"] == alert and r["labels"].get("source") == source
    )
    return found


def _promtool(tmp_path: Path, rendered: dict[str, Any], cases: list[Any]) -> None:
    """``promtool check rules`` and ``promtool test rules`` pass on the rendered rules."""
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rendered["spec"]), encoding="utf-8")
    tests_file = tmp_path / "tests.yaml"
    tests_file.write_text(
        yaml.safe_dump(
            {"rule_files": [rules_file.name], "evaluation_interval": "1m", "tests": cases}
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
    rule = _rule(rendered, alert.alert)
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
    _promtool(
        tmp_path, rendered, _online_cases(spec, _rule(rendered, alert.alert, "online"), alert)
    )


def test_online_scores_off_never_alert_on_live_traffic(tmp_path: Path) -> None:
    on = EvalScheduleSpec.model_validate(BASE)
    alerts = SPECS["seed-defaults"].get("alerts", {})
    off = EvalScheduleSpec.model_validate({**BASE, "alerts": {**alerts, "onlineScores": False}})
    rendered_on = render_eval_rules(OWNER, on, RenderSettings())
    rendered = render_eval_rules(OWNER, off, RenderSettings())
    for alert in ONLINE_ALERTS:
        sustained = _online_cases(on, _rule(rendered_on, alert.alert, "online"), alert)[0]
        for check in sustained["alert_rule_test"]:
            check["exp_alerts"] = []
        _promtool(tmp_path, rendered, [sustained])


def _run_labels(spec: EvalScheduleSpec) -> dict[str, str]:
    return {
        "namespace": OWNER.namespace,
        "agent": "contracts",
        "eval_schedule": OWNER.name,
        "severity": spec.alerts.severity,
    }


def _run_series(metric: str) -> str:
    return f'{metric}{{namespace="{OWNER.namespace}", agent="contracts", eval_schedule="nightly"}}'


@pytest.mark.parametrize("variant", list(SPECS))
def test_failing_fires_while_the_last_run_failed(tmp_path: Path, variant: str) -> None:
    spec = EvalScheduleSpec.model_validate({**BASE, **SPECS[variant]})
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    rule = _rule(rendered, "RAGEvalFailing")
    fired = {"exp_labels": _run_labels(spec), "exp_annotations": rule["annotations"]}
    name = "RAGEvalFailing"
    case = {
        "interval": "1m",
        # before any run (0), a run fails at 30m, the next one succeeds at 90m
        "input_series": [
            {
                "series": _run_series("sleuth_eval_last_run_failed"),
                "values": "0+0x29 1+0x59 0+0x59",
            }
        ],
        "alert_rule_test": [
            {"eval_time": "10m", "alertname": name, "exp_alerts": []},
            {"eval_time": "29m", "alertname": name, "exp_alerts": []},
            {"eval_time": "31m", "alertname": name, "exp_alerts": [fired]},
            {"eval_time": "89m", "alertname": name, "exp_alerts": [fired]},
            {"eval_time": "91m", "alertname": name, "exp_alerts": []},
            {"eval_time": "140m", "alertname": name, "exp_alerts": []},
        ],
    }
    _promtool(tmp_path, rendered, [case])


def _humanize_duration(seconds: int) -> str:
    """Prometheus's humanizeDuration for whole seconds of at least one minute."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s"


@pytest.mark.parametrize(
    ("over", "stale_minutes"),
    [
        ({"schedule": "*/10 * * * *"}, 20),  # two gaps of the schedule
        ({"schedule": "0,15 * * * *"}, 90),  # the longest gap is 45m (:15 to :00)
        ({"schedule": "*/10 * * * *", "alerts": {"staleAfter": "35m"}}, 35),
    ],
)
def test_stale_fires_after_s_without_success_not_before(
    tmp_path: Path, over: dict[str, Any], stale_minutes: int
) -> None:
    spec = EvalScheduleSpec.model_validate({**BASE, **over})
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    rule = _rule(rendered, "RAGEvalStale")
    s = stale_minutes
    success = 3 * s  # a second success; the first one is at time 0

    def fired(minutes_since: int) -> dict[str, Any]:
        annotations = dict(rule["annotations"])
        annotations["description"] = annotations["description"].replace(
            "{{ $value | humanizeDuration }}", _humanize_duration(minutes_since * 60)
        )
        return {"exp_labels": _run_labels(spec), "exp_annotations": annotations}

    name = "RAGEvalStale"
    case = {
        "interval": "1m",
        "input_series": [
            {
                "series": _run_series("sleuth_eval_last_success_timestamp_seconds"),
                "values": f"0+0x{success - 1} {success * 60}+0x{3 * s}",
            }
        ],
        "alert_rule_test": [
            {"eval_time": "1m", "alertname": name, "exp_alerts": []},
            {"eval_time": f"{s}m", "alertname": name, "exp_alerts": []},  # exactly S: not yet
            {"eval_time": f"{s + 1}m", "alertname": name, "exp_alerts": [fired(s + 1)]},
            {"eval_time": f"{success - 1}m", "alertname": name, "exp_alerts": [fired(success - 1)]},
            {"eval_time": f"{success}m", "alertname": name, "exp_alerts": []},  # it succeeded
            {"eval_time": f"{success + s - 1}m", "alertname": name, "exp_alerts": []},
            {"eval_time": f"{success + s + 2}m", "alertname": name, "exp_alerts": [fired(s + 2)]},
        ],
    }
    _promtool(tmp_path, rendered, [case])


def test_a_suspended_schedule_is_never_stale(tmp_path: Path) -> None:
    spec = EvalScheduleSpec.model_validate({**BASE, "schedule": "*/10 * * * *", "suspend": True})
    rendered = render_eval_rules(OWNER, spec, RenderSettings())
    case = {
        "interval": "1m",
        "input_series": [
            {
                "series": _run_series("sleuth_eval_last_success_timestamp_seconds"),
                "values": "0+0x300",
            }
        ],
        "alert_rule_test": [
            {"eval_time": f"{m}m", "alertname": "RAGEvalStale", "exp_alerts": []}
            for m in (30, 100, 290)
        ],
    }
    _promtool(tmp_path, rendered, [case])
