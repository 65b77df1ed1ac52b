"""The tests' trace backend (tests/support/jaeger.py): Jaeger built from the Go module proxy,
started on free loopback ports; a span sent with the OpenTelemetry SDK over OTLP/HTTP is read back
through the query API, by trace id and by service."""

from __future__ import annotations

import socket
import uuid
from urllib.parse import urlsplit

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind

from sleuth.core.process import answers
from tests.support.jaeger import Jaeger, required_binary, running_jaeger

pytestmark = pytest.mark.integration


def _send(backend: Jaeger, service: str) -> str:
    """Export a two-span trace of ``service``; return its trace id (32 lowercase hex)."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=backend.otlp_traces_url, timeout=10))
    )
    tracer = provider.get_tracer("sleuth.tests")
    try:
        with tracer.start_as_current_span("invoke_agent contracts", kind=SpanKind.SERVER) as root:
            root.set_attribute("gen_ai.operation.name", "invoke_agent")
            with tracer.start_as_current_span("chat qwen", kind=SpanKind.CLIENT) as chat:
                chat.set_attribute("gen_ai.request.model", "qwen")
                chat.set_attribute("gen_ai.usage.input_tokens", 42)
                chat.add_event("sleuth.online.faithfulness", {"score": 0.75})
            trace_id = format(root.get_span_context().trace_id, "032x")
    finally:
        provider.shutdown()  # flushes
    return trace_id


def test_a_span_sent_over_otlp_http_is_read_back(jaeger: Jaeger) -> None:
    service = f"sleuth-test-{uuid.uuid4().hex[:8]}"
    trace_id = _send(jaeger, service)

    trace = jaeger.wait_trace(trace_id, spans=2)
    assert trace.trace_id == trace_id
    assert trace.names() == ["chat qwen", "invoke_agent contracts"]
    root, chat = trace.one("invoke_agent contracts"), trace.one("chat qwen")
    assert root.parent_id is None
    assert root.kind == "server"
    assert chat.parent_id == root.span_id
    assert chat.kind == "client"
    assert trace.children(root) == [chat]
    assert {root.service, chat.service} == {service}
    assert chat.attributes["gen_ai.request.model"] == "qwen"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 42
    assert chat.events == [{"event": "sleuth.online.faithfulness", "score": 0.75}]

    assert service in jaeger.services()
    assert [t.trace_id for t in jaeger.traces(service)] == [trace_id]
    assert jaeger.trace("0" * 31 + "1") is None  # an unknown id: nothing, not an error


def test_the_backend_stops_with_its_block() -> None:
    """A second backend on its own ports next to the session's, gone when its block ends."""
    with running_jaeger(required_binary()) as backend:
        assert answers(backend.query_url + "/api/services")
        trace_id = _send(backend, "sleuth-test-stop")
        assert backend.wait_trace(trace_id, spans=2).trace_id == trace_id
    for url in (backend.query_url, backend.otlp_endpoint):
        address = urlsplit(url)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((address.hostname, address.port), timeout=2).close()
