"""Running the RAGAS metrics over rows: every (row, metric) counted, failures listed.

All (row, metric) tasks start at once; the judge's semaphore is the only throttle, so the run
keeps exactly ``concurrency`` judge calls in flight. A task that fails (timeout, HTTP error,
unparsable after one retry, no verdicts) becomes a :class:`Failure` naming the row, the metric
and the reason; its row is left out of that metric's mean, never averaged in as 0, and the
summary says how many rows each mean stands on.

A row without contexts (the agent retrieved nothing) cannot be scored by the metrics that judge
contexts: on an adversarial row that may be the right behaviour, so it is *skipped* (listed, not
a failure); on any other row it is a failure (``no_contexts``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sleuth.evals.progress import Progress
from sleuth.evals.tracing import EvalTrace
from sleuth.scoring.judge import JudgeBundle, JudgeError, describe
from sleuth.scoring.metrics import (
    CONTEXT_PRECISION,
    CONTEXT_PRECISION_SIMPLE,
    METRIC_FUNCTIONS,
    NEEDS_CONTEXTS,
    NEEDS_REFERENCE,
    Judges,
    MetricValues,
)
from sleuth.scoring.samples import RagSample


@dataclass
class Failure:
    row_id: str
    metric: str
    reason: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return dict(self.__dict__)


@dataclass
class RagRun:
    rows: list[dict[str, Any]]
    failures: list[Failure]
    metrics: list[str]
    usage: dict[str, Any]
    judge: dict[str, Any]
    duration_s: float
    value_names: list[str] = field(default_factory=list)
    skipped: list[Failure] = field(default_factory=list)


@dataclass
class RetrievalRun:
    """A judge-free retrieval run (``sleuth eval retrieval``, :mod:`sleuth.evals.retrieval`): its
    rows scored by id (:mod:`sleuth.scoring.retrieval`) at ``k`` passages per call."""

    rows: list[dict[str, Any]]
    k: int
    failures: list[Failure] = field(default_factory=list)
    skipped: list[Failure] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0


def value_names(metrics: Sequence[str]) -> list[str]:
    out: list[str] = []
    for m in metrics:
        out.append(m)
        if m == CONTEXT_PRECISION:
            out.append(CONTEXT_PRECISION_SIMPLE)
    return out


async def run_metrics(
    samples: Sequence[RagSample],
    metrics: Sequence[str],
    bundle: JudgeBundle,
    *,
    strictness: int = 3,
    progress: bool = False,
    trace: EvalTrace | None = None,
) -> RagRun:
    """Score every sample with every metric through ``bundle``'s guarded judge; with ``trace``,
    each score is an ``evaluate <metric>`` span on its row's question trace."""
    spans = trace or EvalTrace.off()
    unknown = [m for m in metrics if m not in METRIC_FUNCTIONS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {sorted(METRIC_FUNCTIONS)}")
    judges = Judges(bundle.llm, bundle.embeddings, strictness)
    rows: list[dict[str, Any]] = [
        {
            "id": s.id,
            "stratum": s.stratum,
            "split": s.split,
            "traceId": s.trace_id,
            "scores": {},
            "details": {},
        }
        for s in samples
    ]
    failures: list[Failure] = []
    skipped: list[Failure] = []
    bar = Progress(len(samples) * len(metrics), "ragas", enabled=progress)

    async def one(idx: int, sample: RagSample, metric: str) -> None:
        if metric in NEEDS_CONTEXTS and not sample.contexts:
            if sample.stratum == "adversarial":
                skipped.append(
                    Failure(
                        sample.id,
                        metric,
                        "no_contexts",
                        "adversarial row answered without retrieval",
                    )
                )
                bar.advance()
            else:
                failures.append(
                    Failure(
                        sample.id, metric, "no_contexts", "the agent retrieved nothing for this row"
                    )
                )
                bar.advance(failed=True)
            return
        if metric in NEEDS_REFERENCE and not sample.reference:
            failures.append(
                Failure(sample.id, metric, "no_reference", "this metric needs a reference answer")
            )
            bar.advance(failed=True)
            return
        with spans.scoring(sample.id, metric) as span:
            try:
                out: MetricValues = await METRIC_FUNCTIONS[metric](sample, judges)
            except JudgeError as exc:
                failures.append(Failure(sample.id, metric, exc.reason, exc.detail))
                spans.unscored(span, exc.reason)
                bar.advance(failed=True)
                return
            except ValueError as exc:  # ragas' own input validation
                failures.append(Failure(sample.id, metric, "invalid_row", str(exc)))
                spans.unscored(span, "invalid_row")
                bar.advance(failed=True)
                return
            spans.scored(span, out.values)
        rows[idx]["scores"].update(out.values)
        if out.details:
            rows[idx]["details"][metric] = out.details
        bar.advance()

    started = time.perf_counter()
    await asyncio.gather(*(one(i, s, m) for i, s in enumerate(samples) for m in metrics))
    duration = time.perf_counter() - started
    failures.sort(key=lambda f: (f.row_id, f.metric))
    return RagRun(
        rows=rows,
        failures=failures,
        metrics=list(metrics),
        usage=bundle.meter.to_json(),
        judge=describe(bundle.config),
        duration_s=duration,
        value_names=value_names(metrics),
        skipped=sorted(skipped, key=lambda f: (f.row_id, f.metric)),
    )
