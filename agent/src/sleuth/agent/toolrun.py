"""Running the tool calls of one model turn: parse, check, cache, time out, record.

Nothing a tool does escapes as an exception: every outcome becomes a :class:`ToolCallRecord`
whose ``observation`` is the tool message the model reads next. Failures are observations of the
form ``{"error": "...", "tool": "..."}``. A failed call (same tool, same canonical arguments) is
run again at most once per conversation; a third request gets ``retry_refused``. Identical calls
in flight at once — from any request of this agent — share one execution
(:class:`~sleuth.core.singleflight.SingleFlight`), each caller under its own timeout.

With tracing on, each call is an ``execute_tool <tool>`` span (:mod:`sleuth.core.spans`): tool
name, call id, status, cache hit, attempt, the ids of the evidence it returned; the arguments
and the observation only with content capture. The span is active while the tool runs, so a
tool service called from it receives it as the parent of its own span.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from sleuth.agent.cache import ToolCache
from sleuth.agent.trace import ToolCallRecord, ToolCallStatus
from sleuth.core import spans
from sleuth.core.llm import ToolCallRequest
from sleuth.core.singleflight import SingleFlight
from sleuth.core.tracing import Tracing
from sleuth.tools.base import Tool, ToolError, ToolMisconfigured, ToolOutput
from sleuth.tools.wire import canonical_arguments

log = logging.getLogger("sleuth.tools")

MAX_OBSERVATION_CHARS = 16000


@dataclass(frozen=True, slots=True)
class BoundTool:
    """A tool with the limits the agent applies to it."""

    tool: Tool
    timeout_s: float = 10.0
    cache_ttl_s: float = 300.0

    @property
    def name(self) -> str:
        return self.tool.spec.name


@dataclass(slots=True)
class Conversation:
    """Per-request state the tool runner needs: failed calls and their attempts."""

    started: float = field(default_factory=time.perf_counter)
    failures: dict[tuple[str, str], int] = field(default_factory=dict)

    def ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


def _error(tool: str, message: str) -> str:
    return json.dumps({"error": message, "tool": tool}, ensure_ascii=False)


def _render(output: ToolOutput) -> str:
    text = json.dumps(output.content, ensure_ascii=False, default=str)
    if len(text) > MAX_OBSERVATION_CHARS:
        text = text[:MAX_OBSERVATION_CHARS] + "…[truncated]"
    return text


class ToolRunner:
    """Runs calls against the offered tools; concurrently when ``parallel`` is on."""

    def __init__(
        self,
        tools: Mapping[str, BoundTool],
        cache: ToolCache | None = None,
        *,
        parallel: bool = True,
        max_parallel: int = 8,
        tracing: Tracing | None = None,
    ) -> None:
        self.tools = dict(tools)
        self.tracing = tracing or Tracing.disabled()
        self.cache = cache
        self.parallel = parallel
        self.max_parallel = max_parallel
        self.flights: SingleFlight[ToolOutput] = SingleFlight()

    def openai_tools(self) -> list[dict[str, Any]]:
        return [bound.tool.spec.to_openai() for bound in self.tools.values()]

    async def run_round(
        self, calls: Sequence[ToolCallRequest], conversation: Conversation
    ) -> list[ToolCallRecord]:
        if len(calls) == 1:
            return [await self._run_one(calls[0], conversation)]
        if not self.parallel:
            return [await self._run_one(call, conversation) for call in calls]
        gate = asyncio.Semaphore(self.max_parallel)

        async def gated(call: ToolCallRequest) -> ToolCallRecord:
            async with gate:
                return await self._run_one(call, conversation)

        return list(await asyncio.gather(*(gated(call) for call in calls)))

    async def _run_one(self, call: ToolCallRequest, conv: Conversation) -> ToolCallRecord:
        if not self.tracing.enabled:
            return await self._execute(call, conv)
        attributes = {
            spans.OPERATION: spans.EXECUTE_TOOL,
            spans.TOOL_NAME: call.name,
            spans.TOOL_CALL_ID: call.id,
            spans.TOOL_TYPE: "function",
        }
        with self.tracing.tracer.start_as_current_span(
            f"{spans.EXECUTE_TOOL} {call.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                record = await self._execute(call, conv)
            except BaseException as exc:  # cancelled with its request
                spans.fail(span, exc)
                raise
            _record_on(span, record, self.tracing.capture_content)
            return record

    async def _execute(self, call: ToolCallRequest, conv: Conversation) -> ToolCallRecord:
        start = conv.ms()

        def record(
            status: ToolCallStatus,
            observation: str,
            arguments: dict[str, Any] | None = None,
            attempt: int = 1,
            output: ToolOutput | None = None,
        ) -> ToolCallRecord:
            citations = [
                {"id": c.id, "source": c.source, "text": c.text}
                for c in (output.citations if output else ())
            ]
            return ToolCallRecord(
                id=call.id,
                tool=call.name,
                arguments=arguments,
                status=status,
                observation=observation,
                start_ms=start,
                end_ms=conv.ms(),
                attempt=attempt,
                citations=citations,
            )

        bound = self.tools.get(call.name)
        if bound is None:
            offered = ", ".join(sorted(self.tools)) or "none"
            message = f"unknown tool {call.name!r}; offered tools: {offered}"
            return record("unknown_tool", _error(call.name, message))
        try:
            arguments = json.loads(call.arguments_text) if call.arguments_text.strip() else {}
        except ValueError as exc:
            arguments = exc
        if not isinstance(arguments, dict):
            message = (
                f"arguments are not a valid JSON object ({arguments}); call {call.name} again "
                "with a JSON object matching its parameters schema"
            )
            return record("malformed", _error(call.name, message))
        missing = [
            name for name in bound.tool.spec.parameters.get("required", []) if name not in arguments
        ]
        if missing:
            message = f"missing required argument(s): {', '.join(missing)}"
            return record("error", _error(call.name, message), arguments)

        key = (call.name, canonical_arguments(arguments))
        attempt = conv.failures.get(key, 0) + 1
        if attempt > 2:
            message = "this call already failed and was retried once; it is not retried again"
            return record("retry_refused", _error(call.name, message), arguments, attempt)
        if self.cache is not None:
            cached = self.cache.get(call.name, arguments)
            if cached is not None:
                return record("cached", _render(cached), arguments, attempt, cached)

        status: ToolCallStatus
        try:
            async with asyncio.timeout(bound.timeout_s):
                output, shared = await self.flights.run(key, lambda: bound.tool.call(arguments))
            if shared:  # another request's identical call answered this one
                trace.get_current_span().set_attribute(spans.TOOL_SHARED, True)
        except TimeoutError:
            status, message = "timeout", f"timeout after {bound.timeout_s:g}s"
        except ToolError as exc:  # misconfigured: for the model, the tool is unavailable
            unavailable = exc.retryable or isinstance(exc, ToolMisconfigured)
            status = "unavailable" if unavailable else "error"
            message = str(exc) or type(exc).__name__
        except Exception as exc:  # a broken tool must not break the loop (its text: logged)
            log.warning("tool %s failed: %r", call.name, exc)
            status, message = "error", f"the tool failed ({type(exc).__name__})"
        else:
            if self.cache is not None:
                self.cache.put(call.name, arguments, output, bound.cache_ttl_s)
            return record("ok", _render(output), arguments, attempt, output)
        conv.failures[key] = attempt
        return record(status, _error(call.name, message), arguments, attempt)


def _record_on(span: Span, record: ToolCallRecord, capture_content: bool) -> None:
    """The outcome of a call on its ``execute_tool`` span."""
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {
        spans.TOOL_STATUS: record.status,
        spans.TOOL_CACHE_HIT: record.status == "cached",
        spans.TOOL_ATTEMPT: record.attempt,
    }
    if record.citations:
        attributes[spans.CITATIONS] = [c["id"] for c in record.citations]
    if capture_content:
        if record.arguments is not None:
            attributes[spans.TOOL_ARGUMENTS] = spans.content_json(record.arguments)
        attributes[spans.TOOL_RESULT] = record.observation
    span.set_attributes(attributes)
    if record.status not in ("ok", "cached"):
        spans.fail(span, record.status)
