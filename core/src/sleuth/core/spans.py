"""Span names and attributes (OpenTelemetry GenAI semantic conventions plus ``sleuth.*``).

One home for the names every package writes on spans or reads back (the agent, the tool
services, the evals, the tests that read traces from the backend), and the ``chat`` span of a
model call, which the one model client (:mod:`sleuth.core.llm`) opens and fills.

A trace of one agent request (and, when ``sleuth eval`` asked it, the eval's spans around it)::

    eval_case <case id>         CLIENT, sleuth eval: one golden question (a link to its run's span)
    ├── invoke_agent <agent>    ...the agent's request below, in the agent's process
    └── evaluate <metric>       INTERNAL, sleuth eval: one score of the answer

A trace of one agent request::

    invoke_agent <agent>        SERVER, the agent (root, or child of the client's traceparent)
    ├── chat <model>            CLIENT, one per model call (its traceparent goes to the server)
    ├── execute_tool <tool>     INTERNAL, one per tool call
    │   └── tool <tool>         SERVER, the tool service (its own process)
    └── chat <model>            ...
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    set_span_in_context,
)

from sleuth.core.tracing import Tracing

# -- GenAI semantic conventions -------------------------------------------------------------------
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"

# -- sleuth's own ---------------------------------------------------------------------------------
TTFT_MS = "sleuth.ttft_ms"
TOOL_CALLS_REQUESTED = "sleuth.model.tool_calls"
ENDPOINT = "sleuth.endpoint"
STOP_REASON = "sleuth.stop_reason"
ITERATIONS = "sleuth.iterations"
DEGRADED = "sleuth.degraded"
CITATIONS = "sleuth.citations"
"""Ids of the evidence an answer or a tool call carries: chunk ids (``doc#3``), ``sql:<table>``."""
TOOL_STATUS = "sleuth.tool.status"
TOOL_CACHE_HIT = "sleuth.tool.cache_hit"
TOOL_ATTEMPT = "sleuth.tool.attempt"
TOOL_SHARED = "sleuth.tool.shared"
TOOL_TRANSPORT = "sleuth.tool.transport"
TOOL_OUTCOME = "sleuth.tool.outcome"
SQL_GUARD_VERDICT = "sleuth.sql.guard_verdict"
SQL_GUARD_RULE = "sleuth.sql.guard_rule"
"""The stable code of the SQL guard rule that refused a query (``sleuth.core.sql.guard.RULES``)."""
SQL_DURATION_MS = "sleuth.sql.duration_ms"
SQL_ROWS = "sleuth.sql.rows"
SQL_TRUNCATED = "sleuth.sql.truncated"
SQL_TABLES = "sleuth.sql.tables"
VECTOR_HITS = "sleuth.vector.hits"
VECTOR_TOP_K = "sleuth.vector.top_k"
ONLINE_SCORE_PREFIX = "sleuth.online."
"""``sleuth.online.<metric>``: an online score recorded on the trace of the request it scored."""
EVAL_SCORE_PREFIX = "sleuth.eval.score."
"""``sleuth.eval.score.<metric>``: a scheduled eval's score, on its golden question's trace."""
EVAL_KIND = "sleuth.eval.kind"
EVAL_AGENT = "sleuth.eval.agent"
EVAL_DATASET = "sleuth.eval.dataset"
EVAL_SPLIT = "sleuth.eval.split"
EVAL_RUN_ID = "sleuth.eval.run_id"
EVAL_CASES = "sleuth.eval.cases"
EVAL_CASE_ID = "sleuth.eval.case.id"
EVAL_CASE_STRATUM = "sleuth.eval.case.stratum"
EVALUATION_NAME = "gen_ai.evaluation.name"
EVALUATION_SCORE = "gen_ai.evaluation.score.value"
EVALUATION_RESULT = "gen_ai.evaluation.result"
"""The GenAI conventions' event carrying one evaluation's name and score."""

INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"
TOOL_SERVICE = "tool"
EVALUATE = "evaluate"
EVAL_CASE = "eval_case"
EVAL_RUN = "eval"


def content_json(value: Any) -> str:
    """Content captured on a span, as JSON text (attributes hold no nested objects)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def fail(span: Span, error: BaseException | str, description: str | None = None) -> None:
    """Mark ``span`` failed: ``error.type`` (a class name or a status), status ERROR."""
    kind = error if isinstance(error, str) else type(error).__name__
    span.set_attribute(ERROR_TYPE, kind)
    span.set_status(Status(StatusCode.ERROR, description))


@contextmanager
def chat_span(
    tracing: Tracing,
    model: str,
    base_url: str,
    params: dict[str, Any],
    messages: list[dict[str, Any]],
) -> Iterator[Span]:
    """The active ``chat <model>`` span of one model call (CLIENT); an exception marks it failed
    and goes on. With content capture the messages sent are on it."""
    url = urlsplit(base_url)
    attributes: dict[str, Any] = {OPERATION: CHAT, REQUEST_MODEL: model}
    if url.hostname:
        attributes[SERVER_ADDRESS] = url.hostname
    if url.port:
        attributes[SERVER_PORT] = url.port
    if "temperature" in params:
        attributes[REQUEST_TEMPERATURE] = params["temperature"]
    if "max_tokens" in params:
        attributes[REQUEST_MAX_TOKENS] = params["max_tokens"]
    with tracing.tracer.start_as_current_span(
        f"{CHAT} {model}",
        kind=SpanKind.CLIENT,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if tracing.capture_content and span.is_recording():
            span.set_attribute(INPUT_MESSAGES, content_json(messages))
        try:
            yield span
        except BaseException as exc:
            fail(span, exc, str(exc)[:300] or None)
            raise


@contextmanager
def evaluation_span(
    tracer: Tracer, metric: str, parent: SpanContext | None
) -> Iterator[Span | None]:
    """The active span ``evaluate <metric>`` under ``parent`` (a span that may have ended, even
    in another process); None, and no span, without a parent."""
    if parent is None:
        yield None
        return
    with tracer.start_as_current_span(
        f"{EVALUATE} {metric}",
        context=set_span_in_context(NonRecordingSpan(parent)),
        kind=SpanKind.INTERNAL,
        attributes={EVALUATION_NAME: metric},
        record_exception=False,
    ) as span:
        yield span


def record_score(span: Span | None, prefix: str, metric: str, value: float) -> None:
    """A score on its evaluation span: the attribute ``<prefix><metric>`` and the GenAI
    ``gen_ai.evaluation.result`` event."""
    if span is None:
        return
    span.set_attribute(f"{prefix}{metric}", value)
    span.add_event(EVALUATION_RESULT, {EVALUATION_NAME: metric, EVALUATION_SCORE: value})


def record_failure(span: Span | None, attribute: str, reason: str) -> None:
    """An evaluation that gave no score: ``attribute`` holds the reason, status ERROR."""
    if span is not None:
        span.set_attribute(attribute, reason)
        span.set_status(Status(StatusCode.ERROR, reason))
