"""Span export that never waits on the collector: a bounded queue, a worker thread, counted drops.

:class:`BoundedBatchProcessor` takes finished spans in ``on_end`` (a lock and an append: what a
request pays) and a daemon thread exports them in batches through the OTLP/HTTP exporter. When
the queue is full — the collector is down, slow, or the exporter is retrying — the newest span is
dropped and counted (reason ``queue_full``); a batch the exporter gives up on is counted too
(reason ``export_failed``). The SDK's own batch processor drops silently when full, which is why
this one exists.

:func:`build_provider` assembles the provider of :func:`sleuth.core.tracing.start_tracing` from
:class:`~sleuth.core.tracesettings.TracingSettings` without reading the environment (the resource is
built from the settings alone, not by the SDK's environment detectors).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Tracer

from sleuth.core.tracesettings import DropCounter, TracingSettings

log = logging.getLogger("sleuth.tracing")


class BoundedBatchProcessor(SpanProcessor):
    """Queue finished spans (at most ``max_queue_size``); a thread exports them in batches."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int = 2048,
        max_export_batch_size: int = 512,
        schedule_delay_s: float = 1.0,
        on_dropped: DropCounter | None = None,
    ) -> None:
        self._exporter = exporter
        self._max_queue = max_queue_size
        self._batch = max_export_batch_size
        self._delay_s = schedule_delay_s
        self._on_dropped = on_dropped
        self._queue: deque[ReadableSpan] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._exporting = False
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="sleuth-span-export", daemon=True)
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is None or not span.context.trace_flags.sampled:
            return
        with self._lock:
            if self._stopping or len(self._queue) >= self._max_queue:
                full = True
            else:
                full = False
                self._queue.append(span)
                size = len(self._queue)
        if full:
            self._dropped(1, "queue_full")
        elif size >= self._batch:
            self._wake.set()

    def _dropped(self, count: int, reason: str) -> None:
        if self._on_dropped is not None:
            try:
                self._on_dropped(count, reason)
            except Exception:  # a counter must not break span export
                log.exception("the dropped-spans counter failed")

    def _take(self) -> list[ReadableSpan]:
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
            self._exporting = bool(batch)
            return batch

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        try:
            result = self._exporter.export(batch)
        except Exception:  # the exporter's own failure: the batch is lost, counted
            log.exception("exporting %d spans failed", len(batch))
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self._dropped(len(batch), "export_failed")

    def _work(self) -> None:
        while True:
            self._wake.wait(self._delay_s)
            self._wake.clear()
            while batch := self._take():
                self._export(batch)
            with self._lock:
                self._exporting = False
                self._idle.notify_all()
                if self._stopping:
                    return

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Wait until the queue is empty and no export runs (at most ``timeout_millis``)."""
        deadline = time.monotonic() + timeout_millis / 1000
        self._wake.set()
        with self._lock:
            while self._queue or self._exporting:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._wake.set()
                self._idle.wait(min(left, 0.05))
        return True

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is queued within ``timeout_s``; what is left is dropped and counted."""
        deadline = time.monotonic() + timeout_s
        self.force_flush(int(timeout_s * 1000))
        with self._lock:
            self._stopping = True
            left = len(self._queue)
            self._queue.clear()
        if left:
            self._dropped(left, "shutdown")
        self._exporter.shutdown()  # ends an export still retrying against a dead collector
        self._wake.set()
        self._thread.join(timeout=max(0.5, deadline - time.monotonic()))


def sampler_of(name: str, ratio: float) -> Sampler:
    """The SDK sampler an ``OTEL_TRACES_SAMPLER`` name (checked by the settings) stands for."""
    root: Sampler
    if name.endswith("always_on"):
        root = ALWAYS_ON
    elif name.endswith("always_off"):
        root = ALWAYS_OFF
    else:
        root = TraceIdRatioBased(ratio)
    return ParentBased(root) if name.startswith("parentbased_") else root


class Provider:
    """The SDK provider with its processor, shut down with a bound."""

    def __init__(self, provider: TracerProvider, processor: BoundedBatchProcessor) -> None:
        self.provider = provider
        self.processor = processor

    def get_tracer(self, name: str) -> Tracer:
        return self.provider.get_tracer(name)

    def shutdown(self, timeout_s: float) -> None:
        self.processor.shutdown(timeout_s)


def build_provider(settings: TracingSettings, on_dropped: DropCounter | None = None) -> Provider:
    """A tracer provider exporting to ``settings.endpoint`` through a bounded queue."""
    assert settings.endpoint is not None
    resource = Resource({**settings.resource_attributes, "service.name": settings.service_name})
    provider = TracerProvider(
        sampler=sampler_of(settings.sampler, settings.sampler_arg),
        resource=resource,
        shutdown_on_exit=False,
    )
    exporter = OTLPSpanExporter(
        endpoint=settings.endpoint,
        headers=dict(settings.headers),
        timeout=settings.export_timeout_s,
    )
    processor = BoundedBatchProcessor(
        exporter,
        max_queue_size=settings.max_queue_size,
        max_export_batch_size=settings.max_export_batch_size,
        schedule_delay_s=settings.schedule_delay_s,
        on_dropped=on_dropped,
    )
    provider.add_span_processor(processor)
    return Provider(provider, processor)


__all__ = ["BoundedBatchProcessor", "Provider", "build_provider", "sampler_of"]
