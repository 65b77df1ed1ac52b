"""promtool unit tests of the run-health alerts of an EvalSchedule: RAGEvalFailing fires while
the last run failed; RAGEvalStale fires once no run has succeeded for S, not before, and never
while the schedule is suspended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.operator.render import RenderSettings
from sleuth.operator.render.evalrules import render_eval_rules
from tests.operator.promtool_kit import BASE, NEEDS_PROMTOOL, OWNER, SPECS, rule_of, run_promtool

pytestmark = [pytest.mark.integration, NEEDS_PROMTOOL]


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
    rule = rule_of(rendered, "RAGEvalFailing")
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
    run_promtool(tmp_path, rendered, [case])


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
    rule = rule_of(rendered, "RAGEvalStale")
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
    run_promtool(tmp_path, rendered, [case])


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
    run_promtool(tmp_path, rendered, [case])
