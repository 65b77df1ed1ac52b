"""The operator's Prometheus endpoint (``sleuth operator --metrics-port``).

Serves the process collectors of ``prometheus_client`` (CPU, memory, open files, start time,
garbage collection) and ``sleuth_operator_info{version}``, so that the chart's ServiceMonitor
and its alerts have a target. Reconcile counters belong here when the handlers record them.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, Gauge, start_http_server

import sleuth


def serve(port: int, address: str = "0.0.0.0", registry: CollectorRegistry = REGISTRY) -> None:
    """Serve ``/metrics`` on ``address:port`` from a daemon thread."""
    info = Gauge(
        "sleuth_operator_info",
        "The running operator (always 1), labelled with its version.",
        ["version"],
        registry=registry,
    )
    info.labels(sleuth.__version__).set(1)
    start_http_server(port, addr=address, registry=registry)


__all__ = ["serve"]
