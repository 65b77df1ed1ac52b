"""Which trace an online sample's scores go to (:func:`sleuth.agent.onlineeval.trace_parent`)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON
from opentelemetry.trace import format_trace_id

from sleuth.agent.onlineeval import trace_parent

pytestmark = pytest.mark.unit

GIVEN = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_the_current_sampled_span_is_the_parent() -> None:
    tracer = TracerProvider(sampler=ALWAYS_ON).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a") as span:
        tid, parent = trace_parent(None)
        assert tid == format_trace_id(span.get_span_context().trace_id)
        assert parent == span.get_span_context()
        # an id that is not the current span's: its own trace, not the current span
        other, other_parent = trace_parent(GIVEN)
        assert other == GIVEN
        assert other_parent is not None
        assert format_trace_id(other_parent.trace_id) == GIVEN
        assert other_parent.span_id != span.get_span_context().span_id


def test_an_unsampled_or_absent_span_gives_no_id() -> None:
    """A trace the backend will not have is no exemplar: an exemplar must lead somewhere."""
    tracer = TracerProvider(sampler=ALWAYS_OFF).get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a") as span:
        assert span.get_span_context().is_valid
        assert trace_parent(None) == (None, None)
    assert trace_parent(None) == (None, None)
    for bad in ("", "xyz", "0" * 32, GIVEN[:31], GIVEN + "0"):
        assert trace_parent(bad) == (None, None)
