"""EvalSchedule run results as Prometheus series on the operator's ``/metrics``, from status.

The eval runs write their results into their EvalSchedule's status (no Pushgateway). The operator
keeps the last status it saw of each EvalSchedule (fed by the watch events, the initial listing
after a start included) and computes the series at each scrape, so that a restarted operator
exports the same values again. Every series carries ``namespace``, ``agent``
(``spec.agentRef.name``) and ``eval_schedule``:

- the scores of the last successful run, with ``dataset``, ``split`` and ``source="eval"``:
  ``rag_faithfulness_score``, ``rag_answer_relevancy_score``,
  ``rag_context_precision_score{form="simple"}``, ``rag_context_recall_score``,
  ``rag_noise_sensitivity_score``, ``agent_tool_selection_accuracy`` (a score not in status has
  no series);
- ``sleuth_eval_last_run_timestamp_seconds``: when the last run finished (no series before the
  first run);
- ``sleuth_eval_last_success_timestamp_seconds``: when the last successful run finished, the
  EvalSchedule's creationTimestamp until then (so that a schedule that never succeeds goes stale);
- ``sleuth_eval_last_run_failed``: 1 when the last run failed, else 0 (0 before any run);
- ``sleuth_eval_last_run_rows`` and ``sleuth_eval_last_run_failed_rows``: rows (and TSA cases)
  the last successful run attempted and could not score.

A deleted EvalSchedule's series disappear (:meth:`EvalMetrics.forget`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import ValidationError

from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleStatus, EvalScores
from sleuth.core.names import (
    LAST_RUN_FAILED,
    LAST_RUN_FAILED_ROWS,
    LAST_RUN_ROWS,
    LAST_RUN_TIMESTAMP,
    LAST_SUCCESS_TIMESTAMP,
    RAG_GAUGES,
    SCHEDULE_LABELS,
    SOURCE_EVAL,
    SOURCE_LABEL,
    TSA_GAUGE,
)

log = logging.getLogger("sleuth.operator")

LABELS = SCHEDULE_LABELS
SCORE_LABELS = (*LABELS, "dataset", "split", SOURCE_LABEL)


@dataclass(frozen=True)
class ScoreSeries:
    """One score of ``status.scores`` and the metric it is exported as."""

    field: str  # EvalScores attribute
    metric: str
    help: str
    extra: tuple[tuple[str, str], ...] = ()


# status.scores field -> the value name of the same score in an eval run's own exposition, so
# that both name and describe it alike (sleuth.evals.report.prometheus).
_RUN_VALUE = {
    "faithfulness": "faithfulness",
    "answer_relevancy": "answer_relevancy",
    "context_precision": "context_precision_simple",  # status holds the simple form
    "context_recall": "context_recall",
    "noise_sensitivity": "noise_sensitivity",
}
SCORES: tuple[ScoreSeries, ...] = (
    *(
        ScoreSeries(
            field, RAG_GAUGES[key][0], RAG_GAUGES[key][1], tuple(RAG_GAUGES[key][2].items())
        )
        for field, key in _RUN_VALUE.items()
    ),
    ScoreSeries("tool_selection_accuracy", *TSA_GAUGE),
)

# The status fields read here; the rest (conditions, currentRun) is not parsed.
_RESULT_FIELDS = (
    "lastRunTime",
    "lastRunOutcome",
    "lastSuccessfulRunTime",
    "scores",
    "rows",
    "failedRows",
    "dataset",
    "split",
)


def _seconds(timestamp: str | None) -> float | None:
    """Unix seconds of an RFC 3339 timestamp; None when absent or unreadable."""
    if not timestamp:
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class EvalResults:
    """What the series of one EvalSchedule are computed from."""

    namespace: str
    name: str
    uid: str
    agent: str
    created: float | None
    status: EvalScheduleStatus

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> EvalResults:
        """Read an EvalSchedule (as the apiserver returns it); ValidationError if its status
        does not match the status model."""
        meta = obj.get("metadata") or {}
        status = obj.get("status") or {}
        results = {k: status[k] for k in _RESULT_FIELDS if status.get(k) is not None}
        return cls(
            namespace=str(meta.get("namespace", "")),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            agent=str(((obj.get("spec") or {}).get("agentRef") or {}).get("name", "")),
            created=_seconds(meta.get("creationTimestamp")),
            status=EvalScheduleStatus.model_validate(results),
        )

    def labels(self) -> list[str]:
        return [self.namespace, self.agent, self.name]


class EvalMetrics(Collector):
    """A collector of the last results seen per EvalSchedule; thread-safe."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, str], EvalResults] = {}
        self._lock = threading.Lock()

    def observe(self, obj: Mapping[str, Any]) -> None:
        """Remember the results in ``obj``'s status (a status that does not parse is logged and
        ignored: the previous results stay)."""
        try:
            results = EvalResults.from_object(obj)
        except ValidationError as err:
            meta = obj.get("metadata") or {}
            log.warning(
                "EvalSchedule %s/%s: status results not exported: %s",
                meta.get("namespace"),
                meta.get("name"),
                err,
            )
            return
        with self._lock:
            self._results[(results.namespace, results.name)] = results

    def forget(self, namespace: str, name: str, uid: str | None = None) -> None:
        """Drop an EvalSchedule's series; with ``uid``, only if the results are that object's
        (a late delete of an old object must not drop its re-created namesake)."""
        with self._lock:
            known = self._results.get((namespace, name))
            if known is not None and (uid is None or known.uid == uid):
                del self._results[(namespace, name)]

    def snapshot(self) -> list[EvalResults]:
        with self._lock:
            return sorted(self._results.values(), key=lambda r: (r.namespace, r.name))

    def describe(self) -> Iterable[Metric]:
        return list(_families([]))

    def collect(self) -> Iterable[Metric]:
        return list(_families(self.snapshot()))


Value = Callable[[EvalResults], "float | int | None"]


def _families(schedules: list[EvalResults]) -> Iterator[Metric]:
    """Every family (empty ones included, so that names are registered before any object)."""
    for score in SCORES:
        family = GaugeMetricFamily(
            score.metric, score.help, labels=[*SCORE_LABELS, *(k for k, _ in score.extra)]
        )
        for r in schedules:
            value = _score(r.status.scores, score.field)
            if value is not None:
                where = [r.status.dataset or "", r.status.split or "", SOURCE_EVAL]
                family.add_metric([*r.labels(), *where, *(v for _, v in score.extra)], value)
        yield family

    def gauge(metric: str, help_text: str, value: Value) -> GaugeMetricFamily:
        family = GaugeMetricFamily(metric, help_text, labels=list(LABELS))
        for r in schedules:
            v = value(r)
            if v is not None:
                family.add_metric(r.labels(), float(v))
        return family

    yield gauge(
        LAST_RUN_TIMESTAMP,
        "When the last eval run finished (Unix seconds); absent before the first run.",
        lambda r: _seconds(r.status.last_run_time),
    )
    yield gauge(
        LAST_SUCCESS_TIMESTAMP,
        "When the last successful eval run finished (Unix seconds); the EvalSchedule's "
        "creation time until its first successful run.",
        lambda r: _seconds(r.status.last_successful_run_time) or r.created,
    )
    yield gauge(
        LAST_RUN_FAILED,
        "1 when the last eval run failed, else 0 (0 before any run).",
        lambda r: 1 if r.status.last_run_outcome == "Failed" else 0,
    )
    yield gauge(
        LAST_RUN_ROWS,
        "Rows (and TSA cases) the last successful eval run attempted.",
        lambda r: r.status.rows,
    )
    yield gauge(
        LAST_RUN_FAILED_ROWS,
        "Rows the last successful eval run could not score.",
        lambda r: r.status.failed_rows,
    )


def _score(scores: EvalScores | None, field: str) -> float | None:
    if scores is None:
        return None
    value = getattr(scores, field)
    return None if value is None else float(value)


__all__ = ["LABELS", "SCORES", "SCORE_LABELS", "EvalMetrics", "EvalResults"]
