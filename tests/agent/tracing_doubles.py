"""A :class:`~sleuth.core.tracing.Tracing` whose spans land in memory, and readers of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sleuth.core.tracing import Tracing


class MemoryTracing:
    """``tracing`` exports every span at once into ``exporter`` (the SDK's in-memory one)."""

    def __init__(self, capture_content: bool = False, service: str = "test") -> None:
        from opentelemetry.sdk.resources import Resource

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource({"service.name": service}), shutdown_on_exit=False
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing = Tracing(
            self.provider.get_tracer("test"),
            capture_content=capture_content,
            shutdown=lambda _: None,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def of_trace(self, trace_id: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if hex_trace(s) == trace_id]


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.trace_id, "032x")


def hex_span(span: ReadableSpan) -> str:
    assert span.context is not None
    return format(span.context.span_id, "016x")


def parent_id(span: ReadableSpan) -> str | None:
    return None if span.parent is None else format(span.parent.span_id, "016x")


def named(spans: Sequence[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    """The spans whose name starts with ``prefix``, in start order."""
    return sorted((s for s in spans if s.name.startswith(prefix)), key=lambda s: s.start_time or 0)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def all_attribute_text(spans: Sequence[ReadableSpan]) -> str:
    """Every attribute and event value of ``spans`` as one text (to look for leaks)."""
    parts: list[str] = []
    for span in spans:
        parts.extend(f"{k}={v}" for k, v in (span.attributes or {}).items())
        for event in span.events:
            parts.extend(f"{k}={v}" for k, v in (event.attributes or {}).items())
        parts.append(span.name)
    return "\n".join(parts)
