"""EvalSchedule: scheduled RAGAS and tool-selection evaluations of one AgentDeployment, and alerts.

The operator renders a CronJob that runs ``sleuth eval ragas`` against the agent's own service on
the golden dataset (and ``sleuth eval tsa`` on the team's tool selection cases, with the agent's
own first step: :mod:`.evalruns`), and a PrometheusRule whose alerts fire when a score
stays below its threshold (defaults: the seed article's operational thresholds).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, field_validator, model_validator

from sleuth.core.api.fields import ModelName
from sleuth.core.api.v1alpha1.common import (
    URL_PATTERN,
    DataKey,
    LocalObjectRef,
    ObjectName,
    Resources,
    SecretKeyRef,
    SpecModel,
    VolumePath,
    exactly_one_message,
    exactly_one_rule,
)
from sleuth.core.api.v1alpha1.cronschedule import CRON_PATTERN, ZERO_STEP, check_cron
from sleuth.core.api.v1alpha1.evalruns import SOURCES, ReportsSpec, Split, ToolSelectionSpec
from sleuth.core.api.v1alpha1.evalstatus import (  # re-exported: the kind's status lives there
    EvalCounts,
    EvalPart,
    EvalRunProgress,
    EvalScheduleStatus,
    EvalScores,
    RunOutcome,
)

EvalMetric = Literal[
    "faithfulness",
    "answerRelevancy",
    "contextPrecision",
    "contextRecall",
    "noiseSensitivity",
    "toolSelectionAccuracy",
]

# spec metric → the metric name `sleuth eval ragas --metrics` takes (TSA is its own subcommand).
RAGAS_METRICS: dict[str, str] = {
    "faithfulness": "faithfulness",
    "answerRelevancy": "answer_relevancy",
    "contextPrecision": "context_precision",
    "contextRecall": "context_recall",
    "noiseSensitivity": "noise_sensitivity",
}
TSA_METRIC = "toolSelectionAccuracy"

# toolSelectionAccuracy is scored on the team's own cases only (spec.toolSelection): not a default.
DEFAULT_METRICS: tuple[EvalMetric, ...] = (
    "faithfulness",
    "answerRelevancy",
    "contextPrecision",
    "contextRecall",
)

# A Prometheus duration of one unit, e.g. 30m, 90s, 1h.
DURATION_PATTERN = r"^[0-9]+(ms|s|m|h|d|w)$"
# The same, greater than zero: a range selector of 0 makes Prometheus refuse the whole rule group.
POSITIVE_DURATION_PATTERN = r"^0*[1-9][0-9]*(ms|s|m|h|d|w)$"


class ConfigMapDataset(SpecModel):
    """A golden dataset in a ConfigMap, its frozen manifest under ``<key>.manifest.json``."""

    name: ObjectName = Field(description="Name of the ConfigMap.")
    key: DataKey = Field(
        description="Key holding the golden JSONL; the key <key>.manifest.json must hold its "
        "frozen manifest.",
    )


class PvcDataset(SpecModel):
    """A golden dataset on a PersistentVolumeClaim, mounted read-only."""

    claim_name: ObjectName = Field(description="Name of the PersistentVolumeClaim.")
    path: VolumePath = Field(
        description="Path of the golden JSONL inside the claim (relative, no '..'); its frozen "
        "manifest <path>.manifest.json sits next to it.",
    )


class DatasetSpec(SpecModel):
    """The golden dataset: a ConfigMap or a PersistentVolumeClaim holding JSONL, and the split."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [exactly_one_rule("spec.dataset", *SOURCES)]}
    )

    config_map_ref: ConfigMapDataset | None = Field(
        default=None, description="ConfigMap holding the golden JSONL."
    )
    persistent_volume_claim: PvcDataset | None = Field(
        default=None, description="PersistentVolumeClaim holding the golden JSONL."
    )
    split: Split = Field(
        default="test",
        description="Split whose questions are asked (default test: the frozen release split).",
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        description="Value of the 'dataset' label on the scores; defaults to the file's stem.",
    )

    @model_validator(mode="after")
    def _one_source(self) -> DatasetSpec:
        if (self.config_map_ref is None) == (self.persistent_volume_claim is None):
            raise ValueError(exactly_one_message("spec.dataset", *SOURCES))
        return self


class JudgeSpec(SpecModel):
    """An OpenAI-compatible endpoint and model that scores the answers."""

    endpoint: str = Field(
        max_length=2048,
        pattern=URL_PATTERN,
        description="Base URL of the judge's API, including /v1.",
    )
    model: ModelName = Field(description="Model name sent to the judge.")
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the judge's API key, if needed."
    )


class Thresholds(SpecModel):
    """Scores below which an alert fires (defaults: the seed article's operational thresholds)."""

    faithfulness: float = Field(default=0.80, ge=0, le=1, description="Faithfulness (0.80).")
    answer_relevancy: float = Field(
        default=0.70, ge=0, le=1, description="Answer relevancy (0.70)."
    )
    context_precision: float = Field(
        default=0.60, ge=0, le=1, description="Context precision, relevant/K (0.60)."
    )
    context_recall: float = Field(default=0.70, ge=0, le=1, description="Context recall (0.70).")
    tool_selection_accuracy: float = Field(
        default=0.85, ge=0, le=1, description="Tool selection accuracy (0.85)."
    )


class AlertSpec(SpecModel):
    """How the rendered alerts average, how long a low score must last, and when runs are stale."""

    model_config = ConfigDict(populate_by_name=True)

    window: str = Field(
        default="30m",
        pattern=POSITIVE_DURATION_PATTERN,
        description="avg_over_time window of each score (Prometheus duration above zero, "
        "default 30m).",
    )
    for_: str = Field(
        default="10m",
        alias="for",
        pattern=DURATION_PATTERN,
        description="How long the average must stay below its threshold before the alert fires "
        "(default 10m).",
    )
    severity: Literal["info", "warning", "critical"] = Field(
        default="warning", description="Value of the 'severity' label (default warning)."
    )
    online_scores: bool = Field(
        default=True,
        description="Also alert on the scores the agent samples from live traffic "
        '(faithfulness and answer relevancy, source="online"), with the same thresholds, '
        "window and duration (default true).",
    )
    stale_after: str | None = Field(
        default=None,
        pattern=POSITIVE_DURATION_PATTERN,
        description="RAGEvalStale fires when no run has succeeded for this long (Prometheus "
        "duration above zero); default: twice the longest gap between consecutive runs of "
        "spec.schedule.",
    )


def _threshold_rules() -> list[JsonValue]:
    """CEL: a threshold other than its default only for a metric that is scored (the apiserver
    fills in every default, so a default value cannot tell whether the user wrote it)."""
    rules: list[JsonValue] = []
    for name, field in Thresholds.model_fields.items():
        metric, default = field.alias or name, field.default
        scored_by_default = "true" if metric in DEFAULT_METRICS else "false"
        rules.append(
            {
                "rule": f"!has(self.thresholds) || !has(self.thresholds.{metric}) || "
                f"self.thresholds.{metric} == {default!r} || (has(self.metrics) ? "
                f"'{metric}' in self.metrics : {scored_by_default})",
                "message": _unscored(metric),
                "fieldPath": f".thresholds.{metric}",
            }
        )
    return rules


def _unscored(metric: str) -> str:
    return (
        f"spec.thresholds.{metric}: {metric} is not in spec.metrics, so no alert uses this "
        "threshold; score it or remove the threshold"
    )


_TSA_NEEDS_CASES = (
    "spec.toolSelection: toolSelectionAccuracy is scored on your own cases with your agent's "
    "prompt and tools: name them in spec.toolSelection (a ConfigMap or PersistentVolumeClaim "
    "holding TSA JSONL), or leave toolSelectionAccuracy out of spec.metrics"
)
_CASES_UNSCORED = (
    "spec.toolSelection: toolSelectionAccuracy is not in spec.metrics, so no run reads these "
    "cases; add it to spec.metrics or remove spec.toolSelection"
)
_TSA_RULES: list[JsonValue] = [
    {
        "rule": "!has(self.metrics) || !('toolSelectionAccuracy' in self.metrics) || "
        "has(self.toolSelection)",
        "message": _TSA_NEEDS_CASES,
        "fieldPath": ".toolSelection",
    },
    {
        "rule": "!has(self.toolSelection) || "
        "(has(self.metrics) && 'toolSelectionAccuracy' in self.metrics)",
        "message": _CASES_UNSCORED,
        "fieldPath": ".toolSelection",
    },
]

_ZERO_STEP_RULE: JsonValue = {
    "rule": f"!self.schedule.matches('{ZERO_STEP}')",
    "message": "spec.schedule: a step (/n) must be at least 1",
    "fieldPath": ".schedule",
}


class EvalScheduleSpec(SpecModel):
    """Desired state of an EvalSchedule."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [_ZERO_STEP_RULE, *_threshold_rules(), *_TSA_RULES]
        }
    )

    agent_ref: LocalObjectRef = Field(
        description="The AgentDeployment (same namespace) that is evaluated."
    )
    schedule: str = Field(
        max_length=256,
        pattern=CRON_PATTERN,
        description="Cron schedule of the runs: five fields, e.g. '0 */6 * * *'.",
    )
    dataset: DatasetSpec = Field(description="The golden dataset and its split.")
    metrics: list[EvalMetric] = Field(
        default_factory=lambda: list(DEFAULT_METRICS),
        min_length=1,
        max_length=6,
        description="Metrics scored each run (default: faithfulness, answerRelevancy, "
        "contextPrecision, contextRecall). toolSelectionAccuracy needs spec.toolSelection; "
        "noiseSensitivity is opt-in too.",
        json_schema_extra={"x-kubernetes-list-type": "set", "default": list(DEFAULT_METRICS)},
    )
    tool_selection: ToolSelectionSpec | None = Field(
        default=None,
        description="The team's tool selection cases (TSA JSONL), scored when "
        "toolSelectionAccuracy is in spec.metrics with the agent's own system prompt, tools and "
        "descriptions (read from the running agent).",
    )
    judge: JudgeSpec | None = Field(
        default=None,
        description="The judge; defaults to the agent's own model server and model, which "
        "then grades its own answers (condition JudgeIndependent=False).",
    )
    thresholds: Thresholds = Field(
        default_factory=Thresholds,
        description="Alert thresholds per metric.",
        json_schema_extra={"default": {}},
    )
    alerts: AlertSpec = Field(
        default_factory=AlertSpec,
        description="Alert window, duration and severity.",
        json_schema_extra={"default": {}},
    )
    suspend: bool = Field(default=False, description="Stop scheduling new runs.")
    successful_jobs_history_limit: int = Field(
        default=3, ge=0, le=100, description="Finished successful Jobs kept."
    )
    failed_jobs_history_limit: int = Field(
        default=1, ge=0, le=100, description="Finished failed Jobs kept."
    )
    starting_deadline_seconds: int = Field(
        default=600, ge=10, le=86400, description="A run not started this late is skipped."
    )
    active_deadline_seconds: int = Field(
        default=3600, ge=60, le=86400, description="A run still going after this is stopped."
    )
    backoff_limit: int = Field(default=1, ge=0, le=10, description="Retries of a failed run.")
    request_timeout_seconds: int = Field(
        default=120,
        ge=1,
        le=3600,
        description="Seconds each request of a run may take: a golden question to the agent, a "
        "judge call, a TSA case to the model (default 120). The whole run: "
        "activeDeadlineSeconds.",
    )
    reports: ReportsSpec | None = Field(
        default=None,
        description="A PersistentVolumeClaim the runs keep their JSON and HTML reports on; "
        "without it the reports live in the pod's scratch space and go with the pod.",
    )
    concurrency: int = Field(
        default=8, ge=1, le=256, description="Questions and judge calls in flight at once."
    )
    parallelism: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Pods of each run: the golden set (and the TSA cases) split into this many "
        "shards by an Indexed Job; every pod reports its part to status.",
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="sleuth image running `sleuth eval`; defaults to the operator's "
        "workload image (its `--image`, the chart's `image` value), not the operator's own image.",
    )
    resources: Resources | None = Field(
        default=None, description="CPU and memory of each eval pod."
    )

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:
        return check_cron(value)

    @field_validator("metrics")
    @classmethod
    def _unique(cls, value: list[EvalMetric]) -> list[EvalMetric]:
        if len(set(value)) != len(value):
            raise ValueError("spec.metrics: each metric at most once")
        return value

    @model_validator(mode="after")
    def _tsa_cases(self) -> EvalScheduleSpec:
        scored = TSA_METRIC in self.metrics
        if scored and self.tool_selection is None:
            raise ValueError(_TSA_NEEDS_CASES)
        if not scored and self.tool_selection is not None:
            raise ValueError(_CASES_UNSCORED)
        return self

    @model_validator(mode="after")
    def _thresholds_scored(self) -> EvalScheduleSpec:
        for name, field in Thresholds.model_fields.items():
            metric = field.alias or name
            if metric not in self.metrics and getattr(self.thresholds, name) != field.default:
                raise ValueError(_unscored(metric))
        return self


__all__ = [
    "DEFAULT_METRICS",
    "RAGAS_METRICS",
    "TSA_METRIC",
    "AlertSpec",
    "ConfigMapDataset",
    "DatasetSpec",
    "EvalCounts",
    "EvalMetric",
    "EvalPart",
    "EvalRunProgress",
    "EvalScheduleSpec",
    "EvalScheduleStatus",
    "EvalScores",
    "JudgeSpec",
    "PvcDataset",
    "ReportsSpec",
    "RunOutcome",
    "Thresholds",
    "ToolSelectionSpec",
]
