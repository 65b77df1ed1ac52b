"""Eval results into an EvalSchedule's status: each part of a run, then the run once complete.

Every ``sleuth eval ragas|tsa`` process of a scheduled run (one container of one shard) writes
one *part* into ``status.currentRun``; the part that completes the run (``len(parts) ==
expectedParts``) also writes the top-level results, which the operator exports as metrics:

- ``lastRunId``, ``lastRunTime``, ``lastRunOutcome``, ``lastRunMessage``: always;
- ``scores`` (means weighted by each part's ``scored`` counts), ``scored``, ``rows``,
  ``failedRows``, ``dataset``, ``split``, ``datasetSha256``, ``lastSuccessfulRunTime``: only when
  the run succeeded, so a failed run keeps the scores of the last good one.

A run fails when any part failed: its eval stopped on an error, or it could score no row. A
missed threshold is not a failed run (alerts judge the scores). A part whose run id differs from
``currentRun.id`` starts a new ``currentRun``.

This module is pure (what a part does to a status); :mod:`sleuth.evals.statuswriter` talks to
the API server. Errors::

    EvalError (sleuth.evals.errors)
    └── StatusError     the status could not be written (names the EvalSchedule and why)
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from sleuth.core.api.v1alpha1.evalschedule import (
    EvalCounts,
    EvalPart,
    EvalRunProgress,
    EvalScheduleStatus,
    EvalScores,
)
from sleuth.evals.errors import EvalError

STATUS_ENV = "SLEUTH_EVAL_STATUS"
RUN_ID_ENV = "SLEUTH_EVAL_RUN_ID"
EXPECT_PARTS_ENV = "SLEUTH_EVAL_EXPECT_PARTS"

# result-document metric → EvalScores field (context precision: the simple form, relevant/K)
SCORE_FIELDS: dict[str, str] = {
    "faithfulness": "faithfulness",
    "answer_relevancy": "answer_relevancy",
    "context_precision_simple": "context_precision",
    "context_recall": "context_recall",
    "noise_sensitivity": "noise_sensitivity",
    "tool_selection_accuracy": "tool_selection_accuracy",
}
# the top-level fields a completed run writes (the rest of status belongs to the operator)
RESULT_KEYS = (
    "lastRunId",
    "lastRunTime",
    "lastRunOutcome",
    "lastRunMessage",
    "lastSuccessfulRunTime",
    "scores",
    "scored",
    "rows",
    "failedRows",
    "dataset",
    "split",
    "datasetSha256",
    "currentRun",
)
PART_MESSAGE_MAX, RUN_MESSAGE_MAX = 1024, 2048

Kind = Literal["ragas", "tsa"]


class StatusError(EvalError):
    """The results could not be written to the EvalSchedule's status."""


@dataclass(frozen=True)
class StatusTarget:
    """The EvalSchedule a run reports to, given as ``NAMESPACE/NAME``."""

    namespace: str
    name: str

    @classmethod
    def parse(cls, text: str) -> StatusTarget:
        namespace, sep, name = text.strip().partition("/")
        if not sep or not namespace or not name or "/" in name:
            raise ValueError(f"--status {text!r}: expected NAMESPACE/NAME of an EvalSchedule")
        return cls(namespace, name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class RunContext:
    """Which run a part belongs to, and the labels of the scores when it completes the run."""

    run_id: str
    expected_parts: int
    dataset: str | None = None
    split: str | None = None


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def shard_of(shard: str | None) -> tuple[str, str]:
    """(part suffix, INDEX/COUNT) of ``--shard`` (``0/1`` without sharding)."""
    if not shard:
        return "0", "0/1"
    index, _, count = shard.partition("/")
    return str(int(index)), f"{int(index)}/{int(count)}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failed_part(kind: Kind, shard: str | None, message: str, *, finished_at: str) -> EvalPart:
    """The part of an eval that stopped on an error before it had a result."""
    suffix, shard_text = shard_of(shard)
    return EvalPart(
        name=f"{kind}-{suffix}",
        kind=kind,
        shard=shard_text,
        finished_at=finished_at,
        outcome="Failed",
        message=_cut(message, PART_MESSAGE_MAX),
        rows=0,
        failed_rows=0,
    )


def _first_reasons(failures: Sequence[Mapping[str, Any]], limit: int = 3) -> str:
    seen: list[str] = []
    for f in failures:
        reason = str(f.get("reason") or f.get("error") or "error")
        if reason not in seen:
            seen.append(reason)
    more = f" (+{len(seen) - limit} more)" if len(seen) > limit else ""
    return ", ".join(seen[:limit]) + more


def part_from_document(doc: Mapping[str, Any], *, finished_at: str) -> EvalPart:
    """One part from a ``sleuth eval ragas|tsa`` result document (one shard of one kind)."""
    kind: Kind = doc["kind"]
    suffix, shard_text = shard_of(str(doc.get("shard") or "") or None)
    metrics: Mapping[str, Mapping[str, Any]] = doc.get("metrics", {})
    failures: list[Mapping[str, Any]] = list(doc.get("failures", []))
    scores: dict[str, float] = {}
    scored: dict[str, int] = {}
    if kind == "tsa":
        summary = doc["summary"]
        rows, failed_rows = int(summary["cases"]), int(summary["errors"])
        value = metrics.get("tool_selection_accuracy", {}).get("value")
        # TSA is over every case (an endpoint error counts as not passing): weight = cases
        if value is not None and rows:
            scores["tool_selection_accuracy"], scored["tool_selection_accuracy"] = value, rows
        nothing_scored = rows > 0 and failed_rows == rows
    else:
        ids = {str(r["id"]) for r in doc.get("rows", [])}
        failed_ids = {str(f["row_id"]) for f in failures}
        rows, failed_rows = len(ids | failed_ids), len(failed_ids)
        for name, entry in metrics.items():
            field = SCORE_FIELDS.get(name)
            if field is None:
                continue
            scored[field] = int(entry.get("rows") or 0)
            if entry.get("value") is not None and scored[field]:
                scores[field] = float(entry["value"])
        nothing_scored = rows > 0 and not scores
    if nothing_scored:
        outcome: Literal["Succeeded", "Failed"] = "Failed"
        message = f"no row could be scored ({rows} attempted): {_first_reasons(failures)}"
    else:
        outcome = "Succeeded"
        message = (
            "this shard drew no rows"
            if rows == 0
            else f"{_count(rows, 'case' if kind == 'tsa' else 'row')}, {failed_rows} failed"
        )
    return EvalPart(
        name=f"{kind}-{suffix}",
        kind=kind,
        shard=shard_text,
        finished_at=finished_at,
        outcome=outcome,
        message=_cut(message, PART_MESSAGE_MAX),
        rows=rows,
        failed_rows=failed_rows,
        scores=EvalScores.model_validate(scores) if scores else None,
        scored=EvalCounts.model_validate(scored) if scored else None,
        dataset_sha256=doc.get("dataset_sha256") or None,
    )


def merge_scores(parts: Sequence[EvalPart]) -> tuple[EvalScores, EvalCounts]:
    """Means of the parts weighted by the rows each is over; counts added up."""
    means: dict[str, float] = {}
    counts: dict[str, int] = {}
    for field in EvalScores.model_fields:
        total, weight, reported = 0.0, 0, False
        for p in parts:
            n = getattr(p.scored, field) if p.scored else None
            if n is None:
                continue
            reported = True
            value = getattr(p.scores, field) if p.scores else None
            if value is not None and n > 0:
                total += value * n
                weight += n
        if reported:
            counts[field] = weight
        if weight:
            means[field] = round(total / weight, 6)
    return EvalScores.model_validate(means), EvalCounts.model_validate(counts)


def run_results(parts: Sequence[EvalPart], run: RunContext) -> dict[str, Any]:
    """The top-level fields a completed run writes (camelCase; None = remove the field)."""
    finished = max(p.finished_at for p in parts)
    scores, scored = merge_scores(parts)
    failed = [p for p in parts if p.outcome == "Failed"]
    out: dict[str, Any] = {
        "lastRunId": run.run_id,
        "lastRunTime": finished,
        "lastRunOutcome": "Failed" if failed else "Succeeded",
    }
    if failed:
        text = "; ".join(f"{p.name}: {p.message or 'failed'}" for p in failed)
        out["lastRunMessage"] = _cut(
            f"{len(failed)} of {len(parts)} parts failed: {text}", RUN_MESSAGE_MAX
        )
        return out
    if not any(scored.model_dump().values()):  # every shard drew no rows: nothing measured
        out["lastRunOutcome"] = "Failed"
        out["lastRunMessage"] = f"no part of the run scored any row ({len(parts)} parts)"
        return out
    rows = sum(p.rows for p in parts)
    failed_rows = sum(p.failed_rows for p in parts)
    shas = [p.dataset_sha256 for p in parts if p.kind == "ragas" and p.dataset_sha256]
    shas += [p.dataset_sha256 for p in parts if p.dataset_sha256]
    out.update(
        {
            "lastRunMessage": f"{_count(len(parts), 'part')}, {rows} rows and TSA cases, "
            f"{failed_rows} failed",
            "lastSuccessfulRunTime": finished,
            # every field present (null when not scored), so a merge patch drops stale ones
            "scores": scores.model_dump(mode="json", by_alias=True),
            "scored": scored.model_dump(mode="json", by_alias=True),
            "rows": rows,
            "failedRows": failed_rows,
            "dataset": run.dataset,
            "split": run.split,
            "datasetSha256": shas[0] if shas else None,
        }
    )
    return out


def _current(status: Mapping[str, Any], run_id: str) -> list[EvalPart]:
    raw = status.get("currentRun")
    if not isinstance(raw, Mapping) or raw.get("id") != run_id:
        return []
    try:
        return list(EvalRunProgress.model_validate(raw).parts)
    except ValidationError:
        return []  # a hand-edited currentRun: start the run over rather than refuse to report


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return value


def next_status(status: Mapping[str, Any], part: EvalPart, run: RunContext) -> dict[str, Any]:
    """The whole status after ``part`` is reported (pure: what the write makes of ``status``)."""
    parts = [p for p in _current(status, run.run_id) if p.name != part.name] + [part]
    parts.sort(key=lambda p: p.name)
    progress = EvalRunProgress(id=run.run_id, expected_parts=run.expected_parts, parts=parts)
    ours: dict[str, Any] = {"currentRun": progress.to_wire()}
    if len(parts) >= run.expected_parts:
        ours.update(run_results(parts, run))
    EvalScheduleStatus.model_validate(_drop_none(ours))  # refuse to write what the CRD refuses
    new = {k: v for k, v in status.items() if not (k in ours and ours[k] is None)}
    new.update({k: _drop_none(v) for k, v in ours.items() if v is not None})
    return new


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """An RFC 7386 merge patch turning ``old`` into ``new`` (null removes a field)."""
    patch: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            inner = merge_patch(before, value)
            if inner:
                patch[key] = inner
        elif value != before or key not in old:
            patch[key] = value
    return patch


__all__ = [
    "EXPECT_PARTS_ENV",
    "RUN_ID_ENV",
    "STATUS_ENV",
    "RunContext",
    "StatusError",
    "StatusTarget",
    "failed_part",
    "merge_patch",
    "merge_scores",
    "next_status",
    "now_rfc3339",
    "part_from_document",
    "run_results",
]
