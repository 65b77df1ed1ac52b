"""sleuth.core.tracing and sleuth.core.spanexport: settings from OTEL_*, off by default, a
bounded export queue whose drops are counted, and a collector that is down costing nothing."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind

from sleuth.core.errors import ConfigError
from sleuth.core.process import free_port
from sleuth.core.spanexport import BoundedBatchProcessor, sampler_of
from sleuth.core.tracing import (
    Tracing,
    TracingSettings,
    current_trace_id,
    extract_context,
    inject_headers,
    start_tracing,
    trace_id_of,
)

pytestmark = pytest.mark.unit


def test_no_endpoint_means_off() -> None:
    settings = TracingSettings.from_env({"OTEL_SERVICE_NAME": "x"}, "sleuth-agent-a")
    assert settings.endpoint is None
    assert not settings.enabled
    tracing = start_tracing(settings)
    assert not tracing.enabled
    with tracing.tracer.start_as_current_span("invoke_agent a") as span:
        assert not span.is_recording()
        assert trace_id_of(span) is None
        assert current_trace_id() is None
        assert inject_headers({}) == {}  # nothing to propagate
    tracing.shutdown()


def test_settings_read_the_standard_variables() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,team=a%20b",
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.25",
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Basic%20abc",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
        "OTEL_BSP_MAX_QUEUE_SIZE": "100",
    }
    settings = TracingSettings.from_env(env, "sleuth-agent-contracts")
    assert settings.endpoint == "http://collector:4318/v1/traces"
    assert settings.service_name == "sleuth-agent-contracts"
    assert settings.resource_attributes == {"deployment.environment": "prod", "team": "a b"}
    assert settings.headers == {"authorization": "Basic abc"}
    assert (settings.sampler, settings.sampler_arg) == ("parentbased_traceidratio", 0.25)
    assert settings.capture_content
    assert settings.max_queue_size == 100
    assert "TraceIdRatioBased{0.25}" in sampler_of(settings.sampler, 0.25).get_description()

    full = TracingSettings.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://jaeger:4318/v1/traces",
            "OTEL_SERVICE_NAME": "mine",
        },
        "sleuth-agent-contracts",
    )
    assert full.endpoint == "http://jaeger:4318/v1/traces"
    assert full.service_name == "mine"
    assert not full.capture_content


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"),
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "_ARG"),
        ({"OTEL_TRACES_SAMPLER_ARG": "half"}, "OTEL_TRACES_SAMPLER_ARG"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({"OTEL_RESOURCE_ATTRIBUTES": "novalue"}, "OTEL_RESOURCE_ATTRIBUTES"),
        ({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"}, "CAPTURE_MESSAGE"),
        ({"OTEL_BSP_MAX_QUEUE_SIZE": "0"}, "OTEL_BSP_MAX_QUEUE_SIZE"),
    ],
)
def test_a_bad_value_names_its_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        TracingSettings.from_env(env, "svc")


def test_traceparent_round_trip() -> None:
    provider = TracerProvider()
    tracing = Tracing(provider.get_tracer("t"), shutdown=lambda _: None)
    with tracing.tracer.start_as_current_span("parent", kind=SpanKind.SERVER) as span:
        headers = inject_headers({})
        trace_id = trace_id_of(span)
    assert trace_id is not None
    assert len(trace_id) == 32
    assert trace_id == trace_id.lower()
    assert headers["traceparent"].split("-")[1] == trace_id
    with tracing.tracer.start_as_current_span("child", context=extract_context(headers)) as child:
        assert trace_id_of(child) == trace_id
    # not sampled: a valid id, but none is given out (the backend will never have it)
    unsampled = Tracing(TracerProvider(sampler=sampler_of("always_off", 1)).get_tracer("t"))
    with unsampled.tracer.start_as_current_span("x") as span:
        assert span.get_span_context().is_valid
        assert trace_id_of(span) is None


class _GatedExporter(SpanExporter):
    """Blocks in export until released; counts what it was given; can fail."""

    def __init__(self, result: SpanExportResult = SpanExportResult.SUCCESS) -> None:
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.exported: list[str] = []
        self.result = result

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.gate.wait(10)
        self.exported.extend(s.name for s in spans)
        return self.result

    def shutdown(self) -> None:
        self.gate.set()


def _provider(processor: BoundedBatchProcessor) -> TracerProvider:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    return provider


def test_a_full_queue_drops_and_counts_without_waiting() -> None:
    drops: Counter[str] = Counter()
    exporter = _GatedExporter()
    processor = BoundedBatchProcessor(
        exporter,
        max_queue_size=4,
        max_export_batch_size=2,
        schedule_delay_s=0.01,
        on_dropped=lambda n, why: drops.update({why: n}),
    )
    tracer = _provider(processor).get_tracer("t")
    tracer.start_span("first").end()
    tracer.start_span("second").end()
    assert exporter.entered.wait(5), "the worker never exported"
    # the exporter is stuck (a collector that does not answer): the queue takes 4 more, then drops
    started = time.perf_counter()
    for i in range(100):
        tracer.start_span(f"s{i}").end()
    ended_in = time.perf_counter() - started
    assert drops == {"queue_full": 96}
    assert ended_in < 2.0, f"ending 100 spans took {ended_in:.2f} s with the exporter stuck"
    exporter.gate.set()
    assert processor.force_flush(5000)
    assert exporter.exported == ["first", "second", "s0", "s1", "s2", "s3"]
    processor.shutdown(1.0)


def test_a_failed_export_is_counted() -> None:
    drops: Counter[str] = Counter()
    exporter = _GatedExporter(SpanExportResult.FAILURE)
    exporter.gate.set()
    processor = BoundedBatchProcessor(
        exporter, schedule_delay_s=0.01, on_dropped=lambda n, why: drops.update({why: n})
    )
    tracer = _provider(processor).get_tracer("t")
    for i in range(3):
        tracer.start_span(f"s{i}").end()
    assert processor.force_flush(5000)
    assert drops == {"export_failed": 3}
    processor.shutdown(1.0)


def test_collector_down_costs_requests_nothing_and_shutdown_is_bounded() -> None:
    """The real OTLP/HTTP exporter against a closed port: spans end at once, every span is
    counted as dropped, and shutting down takes the bound, not the exporter's retries."""
    drops: Counter[str] = Counter()
    settings = TracingSettings(
        endpoint=f"http://127.0.0.1:{free_port()}/v1/traces",
        service_name="sleuth-test",
        export_timeout_s=30.0,  # retries for 30 s: shutdown must not wait for them
        max_queue_size=50,
        schedule_delay_s=0.01,
    )
    tracing = start_tracing(settings, lambda n, why: drops.update({why: n}))
    assert tracing.enabled
    started = time.perf_counter()
    for i in range(200):
        with tracing.tracer.start_as_current_span(f"request {i}"):
            pass
    ended_in = time.perf_counter() - started
    assert ended_in < 2.0, f"200 spans took {ended_in:.2f} s with the collector down"
    started = time.perf_counter()
    tracing.shutdown(timeout_s=1.0)
    shut_in = time.perf_counter() - started
    assert shut_in < 5.0, f"shutdown took {shut_in:.2f} s"
    assert sum(drops.values()) == 200, drops
    assert drops["queue_full"] > 0
