"""Traces: an OpenTelemetry tracer built from the standard ``OTEL_*`` settings, off by default.

The settings are read once, at the command line's edge
(``TracingSettings.from_env(os.environ, "sleuth-agent-ops")``), and the :class:`Tracing` built
from them is passed to whatever makes spans. Nothing here sets the OpenTelemetry globals: the
tracer travels as an object; only the active span travels implicitly (the API's context, a
context variable), so a child span and the ``traceparent`` header find their parent.

``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``  full URL of the OTLP/HTTP (protobuf) traces endpoint, or
``OTEL_EXPORTER_OTLP_ENDPOINT``         its base (``/v1/traces`` is appended); neither → off
``OTEL_EXPORTER_OTLP_HEADERS``          ``key=value,...`` sent with every export (a collector's
                                        credentials)
``OTEL_EXPORTER_OTLP_TIMEOUT``          one export's deadline, milliseconds (default 10000)
``OTEL_SERVICE_NAME``                   ``service.name`` (else the caller's default)
``OTEL_RESOURCE_ATTRIBUTES``            ``key=value,...`` on every span's resource
``OTEL_TRACES_SAMPLER``/``_ARG``        ``parentbased_always_on`` (default), ``always_on``,
                                        ``always_off``, ``traceidratio``,
                                        ``parentbased_traceidratio``, ``parentbased_always_off``
``OTEL_BSP_MAX_QUEUE_SIZE``             spans waiting for export at most (default 2048)
``OTEL_BSP_MAX_EXPORT_BATCH_SIZE``      spans per export (default 512)
``OTEL_BSP_SCHEDULE_DELAY``             milliseconds between exports (default 1000)
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``  ``true``: prompts, completions, tool
                                        arguments and results go on the spans (default off)

Export never touches a request: a finished span is put in a bounded queue
(:mod:`sleuth.core.spanexport`) that a background thread drains; when the collector is down or
slow the queue fills and further spans are dropped and counted (``on_dropped``), never waited for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from sleuth.core.tracesettings import CAPTURE_CONTENT_ENV, DropCounter, TracingSettings

_PROPAGATOR = TraceContextTextMapPropagator()  # stateless: W3C traceparent/tracestate


class Tracing:
    """A tracer and what goes with it: whether content is captured, and shutting export down.

    :meth:`disabled` is the off state: a no-op tracer whose spans record nothing and propagate
    nothing, at the cost of a function call."""

    def __init__(
        self,
        tracer: Tracer,
        *,
        capture_content: bool = False,
        shutdown: Callable[[float], None] | None = None,
    ) -> None:
        self.tracer = tracer
        self.capture_content = capture_content
        self.enabled = shutdown is not None
        self._shutdown = shutdown

    @classmethod
    def disabled(cls) -> Tracing:
        return cls(trace.NoOpTracer())

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is queued, waiting at most ``timeout_s``, then stop exporting."""
        if self._shutdown is not None:
            self._shutdown(timeout_s)
            self._shutdown = None


def start_tracing(settings: TracingSettings, on_dropped: DropCounter | None = None) -> Tracing:
    """The :class:`Tracing` of ``settings``: disabled without an endpoint, else a tracer
    exporting over OTLP/HTTP through a bounded queue (``on_dropped`` counts what is lost)."""
    if settings.endpoint is None:
        return Tracing.disabled()
    from sleuth.core.spanexport import build_provider  # the SDK loads only when tracing is on

    provider = build_provider(settings, on_dropped)
    tracer = provider.get_tracer("sleuth")
    return Tracing(tracer, capture_content=settings.capture_content, shutdown=provider.shutdown)


def inject_headers(headers: dict[str, str], context: Context | None = None) -> dict[str, str]:
    """``headers`` with the active span's ``traceparent`` (and ``tracestate``) added; unchanged
    when no span is active or tracing is off."""
    _PROPAGATOR.inject(headers, context)
    return headers


def extract_context(headers: Mapping[str, str]) -> Context:
    """The remote parent a request's ``traceparent`` names (an empty context when none)."""
    return _PROPAGATOR.extract(headers)


def trace_id_of(span: Span) -> str | None:
    """The 32-hex trace id of ``span`` when it is recorded and sampled (exported), else None."""
    context = span.get_span_context()
    if not context.is_valid or not context.trace_flags.sampled:
        return None
    return format(context.trace_id, "032x")


def current_trace_id() -> str | None:
    """:func:`trace_id_of` the active span."""
    return trace_id_of(trace.get_current_span())


__all__ = [
    "CAPTURE_CONTENT_ENV",
    "DropCounter",
    "Tracing",
    "TracingSettings",
    "current_trace_id",
    "extract_context",
    "inject_headers",
    "start_tracing",
    "trace_id_of",
]
