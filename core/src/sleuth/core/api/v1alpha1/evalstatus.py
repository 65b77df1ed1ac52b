"""EvalSchedule status: what the operator reports and what the eval runs write back.

A run's pods (each container of each shard) write their :class:`EvalPart` into ``currentRun``
(``sleuth.evals.statuswriter``); the part that completes the run writes the top-level results.
The operator exports them on its ``/metrics`` (``sleuth.operator.evalmetrics``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sleuth.core.api.v1alpha1.common import SpecModel, StatusModel


class EvalScores(SpecModel):
    """Scores of a run or of one part of it (null when not scored)."""

    faithfulness: float | None = Field(default=None, description="Faithfulness.")
    answer_relevancy: float | None = Field(default=None, description="Answer relevancy.")
    context_precision: float | None = Field(
        default=None, description="Context precision, simple form (relevant/K)."
    )
    context_recall: float | None = Field(default=None, description="Context recall.")
    noise_sensitivity: float | None = Field(
        default=None, description="Noise sensitivity (lower is better)."
    )
    tool_selection_accuracy: float | None = Field(
        default=None, description="Tool selection accuracy."
    )


class EvalCounts(SpecModel):
    """Rows (or TSA cases) each score of a part averages over: the weights when parts merge."""

    faithfulness: int | None = Field(default=None, ge=0, description="Faithfulness.")
    answer_relevancy: int | None = Field(default=None, ge=0, description="Answer relevancy.")
    context_precision: int | None = Field(default=None, ge=0, description="Context precision.")
    context_recall: int | None = Field(default=None, ge=0, description="Context recall.")
    noise_sensitivity: int | None = Field(default=None, ge=0, description="Noise sensitivity.")
    tool_selection_accuracy: int | None = Field(
        default=None, ge=0, description="Tool selection accuracy."
    )


RunOutcome = Literal["Succeeded", "Failed"]


class EvalPart(SpecModel):
    """What one container of one pod of a run reported: ``ragas`` or ``tsa``, one shard."""

    name: str = Field(
        min_length=1, max_length=63, description="<kind>-<shard index>, e.g. ragas-0."
    )
    kind: Literal["ragas", "tsa"] = Field(description="Which evaluation this part ran.")
    shard: str = Field(
        pattern=r"^[0-9]+/[0-9]+$", description="INDEX/COUNT of the shard this part scored."
    )
    finished_at: str = Field(
        description="When the part finished (RFC 3339).", json_schema_extra={"format": "date-time"}
    )
    outcome: RunOutcome = Field(
        description="Failed when the part stopped on an error or could score no row."
    )
    message: str | None = Field(
        default=None, max_length=1024, description="Why the part failed, or a summary."
    )
    rows: int = Field(ge=0, description="Rows (or TSA cases) the part attempted.")
    failed_rows: int = Field(ge=0, description="Rows the part could not score.")
    scores: EvalScores | None = Field(default=None, description="Mean scores of this part.")
    scored: EvalCounts | None = Field(
        default=None, description="Rows each mean is over (the weights when parts merge)."
    )
    dataset_sha256: str | None = Field(
        default=None, description="SHA-256 of the dataset file the part read."
    )


class EvalRunProgress(SpecModel):
    """The run being assembled from its parts (each container of each shard writes one)."""

    id: str = Field(
        min_length=1, max_length=253, description="The run: its Job's name, or --run-id."
    )
    expected_parts: int = Field(
        ge=1, description="Parts that complete the run: containers × shards."
    )
    parts: list[EvalPart] = Field(
        default_factory=list,
        description="Parts reported so far.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class EvalScheduleStatus(StatusModel):
    """Observed state of an EvalSchedule: conditions (operator) and run results (the runs).

    A run's pods write their parts into ``currentRun``; the part that completes the run writes
    the top-level results: ``lastRun*`` always, ``scores`` and the counts only when it succeeded.
    """

    last_run_id: str | None = Field(default=None, description="The last finished run (Job name).")
    last_run_time: str | None = Field(
        default=None,
        description="When the last run finished (RFC 3339).",
        json_schema_extra={"format": "date-time"},
    )
    last_run_outcome: RunOutcome | None = Field(
        default=None, description="Succeeded, or Failed when any part of the last run failed."
    )
    last_run_message: str | None = Field(
        default=None, max_length=2048, description="Why the last run failed, or a summary."
    )
    last_successful_run_time: str | None = Field(
        default=None,
        description="When the last successful run finished (RFC 3339).",
        json_schema_extra={"format": "date-time"},
    )
    scores: EvalScores | None = Field(
        default=None, description="Scores of the last successful run."
    )
    scored: EvalCounts | None = Field(
        default=None, description="Rows each score of the last successful run is over."
    )
    rows: int | None = Field(
        default=None, ge=0, description="Rows and TSA cases the last successful run attempted."
    )
    failed_rows: int | None = Field(
        default=None, ge=0, description="Rows the last successful run could not score."
    )
    dataset: str | None = Field(
        default=None, description="The 'dataset' label of the scores (spec.dataset.name or stem)."
    )
    split: str | None = Field(default=None, description="The split the scores are on.")
    dataset_sha256: str | None = Field(
        default=None, description="SHA-256 of the dataset file the last successful run read."
    )
    current_run: EvalRunProgress | None = Field(
        default=None, description="Parts of the run in progress (or of the last one)."
    )


__all__ = [
    "EvalCounts",
    "EvalPart",
    "EvalRunProgress",
    "EvalScheduleStatus",
    "EvalScores",
    "RunOutcome",
]
