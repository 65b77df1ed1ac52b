"""The operator's Prometheus metrics and their endpoint (``sleuth operator --metrics-port``).

Besides the process collectors of ``prometheus_client`` (CPU, memory, open files, start time,
garbage collection) and ``sleuth_operator_info{version}``, the reconcile loop records:

- ``sleuth_operator_reconcile_total{kind,outcome}``: reconciles by outcome: ``success`` (the
  status was computed, whatever it says), ``retryable_error`` (retried: apiserver unreachable,
  throttled, a conflict), ``permanent_error`` (refused by the apiserver; the resync tries again)
  and ``error`` (a bug: an unexpected exception);
- ``sleuth_operator_reconcile_duration_seconds{kind}``: how long each reconcile took;
- ``sleuth_operator_ready{namespace,kind,name}``: 1 while the object's ``Ready`` condition is
  True, 0 otherwise; the series is removed when the object is deleted.

The handlers record into :func:`operator_metrics` (the default registry, the one served). The
EvalSchedule run results (scores, last run, last success) are exported from the EvalSchedules'
status by :mod:`sleuth.operator.evalmetrics`, in the same registry.
"""

from __future__ import annotations

import threading
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
from sleuth.operator.evalmetrics import eval_metrics

KINDS = tuple(k.kind for k in _KINDS)
OUTCOMES = ("success", "retryable_error", "permanent_error", "error")
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


_default: list[OperatorMetrics] = []
_default_lock = threading.Lock()


def operator_metrics() -> OperatorMetrics:
    """The process-wide metrics, registered in prometheus_client's default registry."""
    with _default_lock:
        if not _default:
            _default.append(OperatorMetrics(REGISTRY))
        return _default[0]


def serve(port: int, address: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve ``/metrics`` on ``address:port`` from a daemon thread."""
    if registry is REGISTRY:
        operator_metrics()  # the reconcile series exist (at zero) before the first reconcile
        eval_metrics()  # EvalSchedule results from status (sleuth.operator.evalmetrics)
    info = Gauge(
        "sleuth_operator_info",
        "The running operator (always 1), labelled with its version.",
        ["version"],
        registry=registry,
    )
    info.labels(__version__).set(1)
    start_http_server(port, addr=address, registry=registry)


__all__ = ["KINDS", "OUTCOMES", "OperatorMetrics", "operator_metrics", "serve"]
