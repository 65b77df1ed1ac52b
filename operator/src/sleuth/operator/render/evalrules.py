"""An EvalSchedule's PrometheusRule: low scores, failing runs and stale runs.

``RAGFaithfulnessLow`` is ``avg_over_time(rag_faithfulness_score{namespace, agent,
eval_schedule, source!="online"}[window]) < threshold`` for ``for``; its siblings watch answer
relevancy, context precision (the simple relevant/K form, which the seed's 0.60 is about),
context recall and tool selection accuracy. The series are the operator's own gauges, exported
from the EvalSchedule's status (labels ``namespace``, ``agent``, ``eval_schedule``, ``dataset``,
``split``, ``source="eval"``).

When ``spec.alerts.onlineScores`` is on, faithfulness and answer relevancy get a second rule of
the same name over the scores the agent samples from live traffic (``source="online"``,
averaged over the agent's pods), labelled ``source="online"``.

``RAGEvalFailing`` fires while the last run failed; ``RAGEvalStale`` when no run has succeeded
for ``spec.alerts.staleAfter`` (default: twice the longest gap between runs of the schedule; not
rendered while the schedule is suspended). Every alert links its runbook,
``docs/runbooks/<AlertName>.md``.

What a platform's Prometheus needs (docs/install.md, "Alerts on kube-prometheus-stack"): the
PrometheusRule carries the operator-wide ``rule_labels`` besides its own (a ``ruleSelector``
such as ``release: kube-prometheus-stack`` selects it), and when the operator is scraped without
``honorLabels`` the EvalSchedule's namespace of the operator's series is ``exported_namespace``
(``series_namespace_label``): the rules select on that label and put ``namespace`` back on the
alert, so that alerts route by the agent's namespace either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec, Thresholds
from sleuth.core.names import (
    AGENT_LABEL,
    ANSWER_RELEVANCY_SCORE,
    CONTEXT_PRECISION_SCORE,
    CONTEXT_RECALL_SCORE,
    FAITHFULNESS_SCORE,
    FORM_LABEL,
    FORM_SIMPLE,
    LAST_RUN_FAILED,
    LAST_SUCCESS_TIMESTAMP,
    SCHEDULE_LABELS,
    SOURCE_LABEL,
    SOURCE_ONLINE,
    TOOL_SELECTION_ACCURACY,
)
from sleuth.operator.render.cron import longest_gap_seconds
from sleuth.operator.render.meta import Manifest, Owner, RenderSettings, metadata

FAILING_ALERT = "RAGEvalFailing"
STALE_ALERT = "RAGEvalStale"
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


@dataclass(frozen=True)
class ScoreAlert:
    """One low-score alert: the spec metric it watches and the series it averages."""

    metric: str  # spec metric name (camelCase)
    alert: str
    series: str  # exported metric name
    what: str  # human name in summaries
    extra_selector: tuple[tuple[str, str], ...] = ()
    online: bool = False  # the agent also samples this score from live traffic

    def threshold(self, thresholds: Thresholds) -> float:
        values: dict[str, float] = {
            "faithfulness": thresholds.faithfulness,
            "answerRelevancy": thresholds.answer_relevancy,
            "contextPrecision": thresholds.context_precision,
            "contextRecall": thresholds.context_recall,
            "toolSelectionAccuracy": thresholds.tool_selection_accuracy,
        }
        return values[self.metric]


SCORE_ALERTS: tuple[ScoreAlert, ...] = (
    ScoreAlert(
        "faithfulness", "RAGFaithfulnessLow", FAITHFULNESS_SCORE, "faithfulness", online=True
    ),
    ScoreAlert(
        "answerRelevancy",
        "RAGAnswerRelevancyLow",
        ANSWER_RELEVANCY_SCORE,
        "answer relevancy",
        online=True,
    ),
    ScoreAlert(
        "contextPrecision",
        "RAGContextPrecisionLow",
        CONTEXT_PRECISION_SCORE,
        "context precision",
        ((FORM_LABEL, FORM_SIMPLE),),
    ),
    ScoreAlert("contextRecall", "RAGContextRecallLow", CONTEXT_RECALL_SCORE, "context recall"),
    ScoreAlert(
        "toolSelectionAccuracy",
        "AgentToolSelectionAccuracyLow",
        TOOL_SELECTION_ACCURACY,
        "tool selection accuracy",
    ),
)

RUN_ALERTS: tuple[str, ...] = (FAILING_ALERT, STALE_ALERT)
# Every alert name the operator can render (each has docs/runbooks/<name>.md).
ALERT_NAMES: tuple[str, ...] = (*(a.alert for a in SCORE_ALERTS), *RUN_ALERTS)


def rule_name(schedule: str) -> str:
    """Name of an EvalSchedule's PrometheusRule."""
    return f"{schedule}-eval-alerts"


def runbook_url(alert: str, settings: RenderSettings) -> str:
    return f"{settings.runbook_base_url.rstrip('/')}/{alert}.md"


def duration_seconds(duration: str) -> float:
    """Seconds in a one-unit Prometheus duration (``30m``, ``2d``, ``500ms``)."""
    if duration.endswith("ms"):
        return int(duration[:-2]) / 1000
    return float(int(duration[:-1]) * _UNIT_SECONDS[duration[-1]])


def human_duration(seconds: float) -> str:
    """A Prometheus duration in the largest unit that divides ``seconds`` (``48h`` -> ``2d``)."""
    whole = int(seconds)
    if whole != seconds or whole == 0:
        return f"{int(seconds * 1000)}ms"
    unit = next(u for u, size in _UNIT_SECONDS.items() if whole % size == 0)
    return f"{whole // _UNIT_SECONDS[unit]}{unit}"


def stale_after_seconds(spec: EvalScheduleSpec) -> float | None:
    """S of RAGEvalStale: spec.alerts.staleAfter, else twice the schedule's longest gap.

    None when the schedule never fires (e.g. February 30th) and no staleAfter is given.
    """
    if spec.alerts.stale_after is not None:
        return duration_seconds(spec.alerts.stale_after)
    gap = longest_gap_seconds(spec.schedule)
    return None if gap is None else 2.0 * gap


def _selector(owner: Owner, agent: str, settings: RenderSettings, *extra: str) -> str:
    """The operator's series of this EvalSchedule (namespace under the label Prometheus keeps it
    in: ``settings.series_namespace_label``)."""
    keys = (settings.series_namespace_label, *SCHEDULE_LABELS[1:])
    values = (owner.namespace, agent, owner.name)
    pairs = [f'{k}="{v}"' for k, v in zip(keys, values, strict=True)]
    return ", ".join([*pairs, *extra])


def _labels(
    owner: Owner, spec: EvalScheduleSpec, settings: RenderSettings | None, **extra: str
) -> dict[str, str]:
    """Alert labels; ``settings`` None for a rule over the agent pods' own series (whose
    ``namespace`` is their pods', whatever the operator's scrape does)."""
    labels = {"severity": spec.alerts.severity, "eval_schedule": owner.name, **extra}
    if settings is not None and settings.series_namespace_label != SCHEDULE_LABELS[0]:
        # The scrape's own namespace label is the operator's: the alert routes by the agent's.
        labels[SCHEDULE_LABELS[0]] = owner.namespace
    return labels


def _annotations(alert: str, summary: str, description: str, settings: RenderSettings) -> Manifest:
    return {
        "summary": summary,
        "description": description,
        "runbook_url": runbook_url(alert, settings),
    }


def _score_rule(
    a: ScoreAlert, owner: Owner, agent: str, spec: EvalScheduleSpec, settings: RenderSettings
) -> Manifest:
    threshold = a.threshold(spec.thresholds)
    window, hold = spec.alerts.window, spec.alerts.for_
    extra = [f'{k}="{v}"' for k, v in a.extra_selector]
    selector = _selector(owner, agent, settings, *extra, f'{SOURCE_LABEL}!="{SOURCE_ONLINE}"')
    return {
        "alert": a.alert,
        "expr": f"avg_over_time({a.series}{{{selector}}}[{window}]) < {threshold:g}",
        "for": hold,
        "labels": _labels(owner, spec, settings),
        "annotations": _annotations(
            a.alert,
            f"{a.what.capitalize()} of agent {owner.namespace}/{agent} is below {threshold:g}.",
            f"The {window} average of {a.series} for agent {owner.namespace}/{agent} "
            f'(EvalSchedule {owner.name}) is {{{{ $value | printf "%.3f" }}}}, below the '
            f"threshold {threshold:g}, and has been for {hold}.",
            settings,
        ),
    }


def _online_rule(
    a: ScoreAlert, owner: Owner, agent: str, spec: EvalScheduleSpec, settings: RenderSettings
) -> Manifest:
    threshold = a.threshold(spec.thresholds)
    window, hold = spec.alerts.window, spec.alerts.for_
    online = f'{SOURCE_LABEL}="{SOURCE_ONLINE}"'
    selector = f'namespace="{owner.namespace}", {AGENT_LABEL}="{agent}", {online}'
    return {
        "alert": a.alert,
        "expr": f"avg by (namespace, {AGENT_LABEL}) "
        f"(avg_over_time({a.series}{{{selector}}}[{window}])) < {threshold:g}",
        "for": hold,
        "labels": _labels(owner, spec, None, **{SOURCE_LABEL: SOURCE_ONLINE}),
        "annotations": _annotations(
            a.alert,
            f"{a.what.capitalize()} of agent {owner.namespace}/{agent} on live traffic is "
            f"below {threshold:g}.",
            f"The {window} average of {a.series} sampled from live traffic of agent "
            f"{owner.namespace}/{agent} (all its pods) is "
            f'{{{{ $value | printf "%.3f" }}}}, below the threshold {threshold:g} of '
            f"EvalSchedule {owner.name}, and has been for {hold}.",
            settings,
        ),
    }


def _failing_rule(
    owner: Owner, agent: str, spec: EvalScheduleSpec, settings: RenderSettings
) -> Manifest:
    where = f"{owner.namespace}/{owner.name}"
    return {
        "alert": FAILING_ALERT,
        "expr": f"{LAST_RUN_FAILED}{{{_selector(owner, agent, settings)}}} == 1",
        "labels": _labels(owner, spec, settings),
        "annotations": _annotations(
            FAILING_ALERT,
            f"The last evaluation run of agent {owner.namespace}/{agent} failed.",
            f"The last run of EvalSchedule {where} failed: a part stopped on an error or could "
            "score no row, so its scores were not updated. The reason is in the "
            "EvalSchedule's status.lastRunMessage and status.currentRun.parts.",
            settings,
        ),
    }


def _stale_rule(
    owner: Owner, agent: str, spec: EvalScheduleSpec, seconds: float, settings: RenderSettings
) -> Manifest:
    where, after = f"{owner.namespace}/{owner.name}", human_duration(seconds)
    return {
        "alert": STALE_ALERT,
        "expr": f"time() - {LAST_SUCCESS_TIMESTAMP}"
        f"{{{_selector(owner, agent, settings)}}} > {seconds:g}",
        "labels": _labels(owner, spec, settings),
        "annotations": _annotations(
            STALE_ALERT,
            f"No evaluation run of agent {owner.namespace}/{agent} has succeeded for over {after}.",
            f"EvalSchedule {where} (schedule '{spec.schedule}') has had no successful run for "
            "{{ $value | humanizeDuration }} (since its last success, or since it was created), "
            f"more than the {after} allowed: its scores are old and its score alerts watch stale "
            "values.",
            settings,
        ),
    }


def _rule_metadata(owner: Owner, agent: str, settings: RenderSettings) -> Manifest:
    """The PrometheusRule's metadata: the operator's labels plus ``settings.rule_labels`` (which
    may not replace them: ``sleuth operator`` refuses such a label)."""
    meta = metadata(rule_name(owner.name), owner, "eval", agent)
    meta["labels"] = {**settings.rule_labels, **meta["labels"]}
    return meta


def render_eval_rules(owner: Owner, spec: EvalScheduleSpec, settings: RenderSettings) -> Manifest:
    """The PrometheusRule of an EvalSchedule: score alerts, then the failing and stale alerts."""
    agent = spec.agent_ref.name
    rules: list[Manifest] = []
    for a in SCORE_ALERTS:
        if a.metric not in spec.metrics:
            continue
        rules.append(_score_rule(a, owner, agent, spec, settings))
        if a.online and spec.alerts.online_scores:
            rules.append(_online_rule(a, owner, agent, spec, settings))
    rules.append(_failing_rule(owner, agent, spec, settings))
    stale = stale_after_seconds(spec)
    if not spec.suspend and stale is not None:
        rules.append(_stale_rule(owner, agent, spec, stale, settings))
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": _rule_metadata(owner, agent, settings),
        "spec": {
            "groups": [{"name": f"sleuth-eval.{owner.namespace}.{owner.name}", "rules": rules}]
        },
    }


__all__ = [
    "ALERT_NAMES",
    "FAILING_ALERT",
    "RUN_ALERTS",
    "SCORE_ALERTS",
    "STALE_ALERT",
    "ScoreAlert",
    "duration_seconds",
    "human_duration",
    "render_eval_rules",
    "rule_name",
    "runbook_url",
    "stale_after_seconds",
]
