"""The operator's Prometheus metrics and their endpoint (``sleuth operator --metrics-port``).

Besides the process collectors of ``prometheus_client`` (CPU, memory, open files, start time,
garbage collection) and ``sleuth_operator_info{version}``, the reconcile loop records:

- ``sleuth_operator_reconcile_total{kind,outcome}``: reconciles by outcome: ``success`` (the
  status was computed, whatever it says), ``retryable_error`` (retried: apiserver unreachable,
  throttled, a conflict), ``permanent_error`` (refused by the apiserver; the resync tries again)
  and ``error`` (a bug: an unexpected exception);
- ``sleuth_operator_reconcile_duration_seconds{kind}``: how long each reconcile took;
- ``sleuth_operator_ready{namespace,kind,name}``: 1 while the object's ``Ready`` condition is
  True, 0 otherwise; the series is removed when the object is deleted;
- ``sleuth_operator_writes_total{verb,kind}``: every write the reconcilers send to the apiserver
  (``apply``, ``merge_patch``, ``delete``, ``patch_status``, ``create``, ``replace``); a
  converged operator adds nothing here;
- ``sleuth_operator_applies_skipped_total{kind}``: applies not sent because the child already
  holds what the operator would write (:mod:`sleuth.operator.loop.applier`);
- ``sleuth_operator_workqueue_depth``: keys waiting for a worker
  (:mod:`sleuth.operator.loop.workqueue`).

The control loop (:mod:`sleuth.operator.loop.runtime`) owns one :class:`OperatorMetrics` in the
default registry, the one served. The EvalSchedule run results (scores, last run, last success)
are exported from the EvalSchedules' status by :mod:`sleuth.operator.evalmetrics`, in the same
registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

from sleuth.core import __version__
from sleuth.core.api.v1alpha1.kinds import KINDS as _KINDS
from sleuth.core.names import OPERATOR_READY, OPERATOR_RECONCILE_SECONDS, OPERATOR_RECONCILES

KINDS = tuple(k.kind for k in _KINDS)
OUTCOMES = ("success", "retryable_error", "permanent_error", "error")
WRITES = "sleuth_operator_writes_total"
SKIPPED = "sleuth_operator_applies_skipped_total"
QUEUE_DEPTH = "sleuth_operator_workqueue_depth"
VERBS = ("apply", "merge_patch", "delete", "patch_status", "create", "replace")
_DURATION = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class OperatorMetrics:
    """Reconcile counters, durations and readiness, in one registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter(
            OPERATOR_RECONCILES,
            "Reconciles by kind and outcome (success, retryable_error, permanent_error, error).",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.duration = Histogram(
            OPERATOR_RECONCILE_SECONDS,
            "Time one reconcile took, by kind.",
            ["kind"],
            buckets=_DURATION,
            registry=self.registry,
        )
        self.ready = Gauge(
            OPERATOR_READY,
            "1 while the object's Ready condition is True, else 0; removed when it is deleted.",
            ["namespace", "kind", "name"],
            registry=self.registry,
        )
        self.writes = Counter(
            WRITES.removesuffix("_total"),
            "Writes sent to the apiserver by the reconcilers, by verb and kind.",
            ["verb", "kind"],
            registry=self.registry,
        )
        self.skipped_applies = Counter(
            SKIPPED.removesuffix("_total"),
            "Applies not sent: the child already held what the operator would write.",
            ["kind"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            QUEUE_DEPTH, "Keys waiting in the work queue for a worker.", registry=self.registry
        )
        for kind in KINDS:  # every series exists, at zero, before its first reconcile
            self.duration.labels(kind)
            for outcome in OUTCOMES:
                self.reconciles.labels(kind, outcome)
        self._known: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    def observe(self, kind: str, outcome: str, seconds: float) -> None:
        """Count one reconcile of ``kind`` and its duration."""
        self.reconciles.labels(kind, outcome).inc()
        self.duration.labels(kind).observe(seconds)

    def wrote(self, verb: str, kind: str) -> None:
        """Count one write request."""
        self.writes.labels(verb, kind).inc()

    def skipped(self, kind: str) -> None:
        """Count one apply not sent."""
        self.skipped_applies.labels(kind).inc()

    def total_writes(self) -> float:
        """Writes counted so far, all verbs and kinds."""
        return sum(
            s.value
            for metric in self.writes.collect()
            for s in metric.samples
            if s.name.endswith("_total")
        )

    def follow_queue(self, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as the work queue's depth at each scrape."""
        self.queue_depth.set_function(lambda: float(depth()))

    def track(self, kind: str, namespace: str, name: str, status: dict[str, Any] | None) -> None:
        """Follow the Ready condition of ``status``; None (the object is gone) drops the series."""
        key = (namespace, kind, name)
        with self._lock:
            if status is None:
                if key in self._known:
                    self._known.discard(key)
                    self.ready.remove(*key)
                return
            ready = any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in status.get("conditions") or []
            )
            self.ready.labels(*key).set(1 if ready else 0)
            self._known.add(key)


def serve(port: int, address: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve ``/metrics`` on ``address:port`` from a daemon thread (build the runtime first, so
    that its series exist, at zero, before the first reconcile)."""
    info = Gauge(
        "sleuth_operator_info",
        "The running operator (always 1), labelled with its version.",
        ["version"],
        registry=registry,
    )
    info.labels(__version__).set(1)
    start_http_server(port, addr=address, registry=registry)


__all__ = [
    "KINDS",
    "OUTCOMES",
    "QUEUE_DEPTH",
    "SKIPPED",
    "VERBS",
    "WRITES",
    "OperatorMetrics",
    "serve",
]
