"""An EvalSchedule's PrometheusRule: one alert per scored metric whose average stays too low.

``RAGFaithfulnessLow`` is ``avg_over_time(rag_faithfulness_score{namespace, agent,
eval_schedule}[window]) < threshold`` for ``for``; its siblings watch answer relevancy, context
precision (the simple relevant/K form, which the seed's 0.60 is about), context recall and tool
selection accuracy. Metric names are those the evals export (:mod:`sleuth.evals.report.prometheus`);
the series carry the ``namespace``, ``agent`` and ``eval_schedule`` labels. Every alert links its
runbook, ``docs/runbooks/<AlertName>.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleuth.api.v1alpha1.evalschedule import EvalScheduleSpec, Thresholds
from sleuth.operator.render.meta import Manifest, Owner, RenderSettings, metadata


@dataclass(frozen=True)
class ScoreAlert:
    """One low-score alert: the spec metric it watches and the series it averages."""

    metric: str  # spec metric name (camelCase)
    alert: str
    series: str  # exported metric name
    what: str  # human name in summaries
    extra_selector: tuple[tuple[str, str], ...] = ()

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
    ScoreAlert("faithfulness", "RAGFaithfulnessLow", "rag_faithfulness_score", "faithfulness"),
    ScoreAlert(
        "answerRelevancy",
        "RAGAnswerRelevancyLow",
        "rag_answer_relevancy_score",
        "answer relevancy",
    ),
    ScoreAlert(
        "contextPrecision",
        "RAGContextPrecisionLow",
        "rag_context_precision_score",
        "context precision",
        (("form", "simple"),),
    ),
    ScoreAlert(
        "contextRecall", "RAGContextRecallLow", "rag_context_recall_score", "context recall"
    ),
    ScoreAlert(
        "toolSelectionAccuracy",
        "AgentToolSelectionAccuracyLow",
        "agent_tool_selection_accuracy",
        "tool selection accuracy",
    ),
)

ALERT_NAMES: tuple[str, ...] = tuple(a.alert for a in SCORE_ALERTS)


def rule_name(schedule: str) -> str:
    """Name of an EvalSchedule's PrometheusRule."""
    return f"{schedule}-eval-alerts"


def runbook_url(alert: str, settings: RenderSettings) -> str:
    return f"{settings.runbook_base_url.rstrip('/')}/{alert}.md"


def _selector(owner: Owner, agent: str, extra: tuple[tuple[str, str], ...]) -> str:
    pairs = [("namespace", owner.namespace), ("agent", agent), ("eval_schedule", owner.name)]
    return ", ".join(f'{k}="{v}"' for k, v in [*pairs, *extra])


def _rule(
    a: ScoreAlert, owner: Owner, agent: str, spec: EvalScheduleSpec, settings: RenderSettings
) -> Manifest:
    threshold = a.threshold(spec.thresholds)
    window, hold = spec.alerts.window, spec.alerts.for_
    expr = (
        f"avg_over_time({a.series}{{{_selector(owner, agent, a.extra_selector)}}}[{window}])"
        f" < {threshold:g}"
    )
    return {
        "alert": a.alert,
        "expr": expr,
        "for": hold,
        "labels": {"severity": spec.alerts.severity, "eval_schedule": owner.name},
        "annotations": {
            "summary": f"{a.what.capitalize()} of agent {owner.namespace}/{agent} is below "
            f"{threshold:g}.",
            "description": (
                f"The {window} average of {a.series} for agent {owner.namespace}/{agent} "
                f'(EvalSchedule {owner.name}) is {{{{ $value | printf "%.3f" }}}}, below the '
                f"threshold {threshold:g}, and has been for {hold}."
            ),
            "runbook_url": runbook_url(a.alert, settings),
        },
    }


def render_eval_rules(owner: Owner, spec: EvalScheduleSpec, settings: RenderSettings) -> Manifest:
    """The PrometheusRule of an EvalSchedule: an alert for each scored metric with a threshold."""
    agent = spec.agent_ref.name
    rules = [
        _rule(a, owner, agent, spec, settings) for a in SCORE_ALERTS if a.metric in spec.metrics
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata(rule_name(owner.name), owner, "eval", agent),
        "spec": {
            "groups": [{"name": f"sleuth-eval.{owner.namespace}.{owner.name}", "rules": rules}]
        },
    }


__all__ = [
    "ALERT_NAMES",
    "SCORE_ALERTS",
    "ScoreAlert",
    "render_eval_rules",
    "rule_name",
    "runbook_url",
]
