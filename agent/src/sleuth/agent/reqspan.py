"""The root span of one agent request, ``invoke_agent <agent>``, and the trace id it gives out.

The span starts when a request is accepted, continuing the client's ``traceparent`` if it sent
one; :meth:`RequestSpan.running` makes it the active span while the loop runs, so the ``chat``
and ``execute_tool`` spans (and the ``traceparent`` sent to the model server and the tool
services) hang below it. :meth:`RequestSpan.finish` records how the run ended and ends the span;
it is safe to call more than once (a stream that ends and is then released).

The trace id (32 lowercase hex) goes to the client in the ``X-Sleuth-Trace-Id`` header and as
``sleuth.traceId`` in the body — only when the trace is sampled, so that an id the client gets
is an id the backend has. With tracing off the span is a no-op and there is no id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind

from sleuth.agent.loop import AgentResult
from sleuth.core import spans
from sleuth.core.names import TRACE_ID_HEADER
from sleuth.core.tracing import Tracing, extract_context, trace_id_of


class RequestSpan:
    """``invoke_agent <agent>`` (kind SERVER) of one request to ``endpoint``."""

    def __init__(
        self,
        tracing: Tracing,
        agent: str,
        endpoint: str,
        headers: Mapping[str, str],
        model: str | None = None,
    ) -> None:
        attributes: dict[str, Any] = {
            spans.OPERATION: spans.INVOKE_AGENT,
            spans.AGENT_NAME: agent,
            spans.ENDPOINT: endpoint,
        }
        if model:
            attributes[spans.REQUEST_MODEL] = model
        parent = extract_context(headers) if tracing.enabled else None
        self.span = tracing.tracer.start_span(
            f"{spans.INVOKE_AGENT} {agent}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
        )
        self.capture_content = tracing.capture_content
        self.trace_id = trace_id_of(self.span)
        self._ended = False

    @contextmanager
    def running(self) -> Iterator[None]:
        """The span is the active one inside; an exception (a cancelled run) marks it failed."""
        with trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        ):
            try:
                yield
            except BaseException as exc:
                self.fail(exc)
                raise

    def headers(self) -> dict[str, str]:
        """The response header with the trace id (none when there is no id)."""
        return {TRACE_ID_HEADER: self.trace_id} if self.trace_id else {}

    def body(self) -> dict[str, str]:
        """The ``sleuth`` part's trace id entry (empty when there is no id)."""
        return {"traceId": self.trace_id} if self.trace_id else {}

    def finish(self, result: AgentResult, question: str | None = None) -> None:
        """Record how the run ended and end the span."""
        if self._ended:
            return
        span, run = self.span, result.trace
        if span.is_recording():
            attributes: dict[str, Any] = {
                spans.STOP_REASON: run.stop_reason,
                spans.ITERATIONS: run.iterations,
                spans.INPUT_TOKENS: run.prompt_tokens,
                spans.OUTPUT_TOKENS: run.completion_tokens,
                spans.DEGRADED: run.degraded,
                spans.CITATIONS: [c["id"] for c in result.citations if "id" in c],
            }
            if self.capture_content:
                if question is not None:
                    attributes[spans.INPUT_MESSAGES] = spans.content_json([question])
                attributes[spans.OUTPUT_MESSAGES] = spans.content_json([result.answer])
            span.set_attributes(attributes)
            if run.stop_reason not in ("answered", "awaiting_approval"):
                spans.fail(span, run.stop_reason)
        self.end()

    def fail(self, error: BaseException | str) -> None:
        """End the span as failed (refused, cancelled, broken)."""
        if self._ended:
            return
        spans.fail(self.span, error if isinstance(error, str) else type(error).__name__)
        self.end()

    def end(self) -> None:
        if not self._ended:
            self._ended = True
            self.span.end()


__all__ = ["RequestSpan"]
