"""The model client: one chat completions call against an OpenAI-compatible server (vLLM).

:class:`ChatModel` is what the loop needs; :class:`OpenAIChatModel` implements it over HTTP with
aiohttp, streaming (server-sent events, time to first token measured) or not. Tool calls come back
as :class:`ToolCallRequest` with the raw argument text: parsing it is the loop's job, so that
malformed JSON becomes an observation rather than an exception.

It is the one chat completions client of every sleuth package: the agent's loop, the TSA runner,
the direct judge and the golden-set generator. ``complete(messages, [])`` is a plain completion
(no tools); ``response_format={"type": "json_object"}`` asks for JSON mode on every call; the
:class:`ModelTurn` carries the finish reason and the usage block. Failures raise
:mod:`sleuth.core.errors`: :class:`~sleuth.core.errors.ModelTimeout` (no answer within
``timeout_s``, the whole call) and other :class:`~sleuth.core.errors.ModelUnavailable`
(unreachable, 429, 5xx) are retryable; :class:`~sleuth.core.errors.ModelResponseError` (4xx, a
body that is not a chat completion, a streamed line longer than aiohttp reads) is not. Retrying
is the caller's decision.

``tool_calling="guided"`` (:mod:`sleuth.core.guided`) adds a JSON Schema the reply must follow,
through the server's structured-output field, and parses the reply back into the same
:class:`ModelTurn`; a reply that does not parse raises
:class:`~sleuth.core.guided.GuidedReplyError` (a :class:`ModelResponseError`).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import replace
from typing import Any, Protocol

import aiohttp
from aiohttp.http_exceptions import HttpProcessingError
from opentelemetry.trace import Span

from sleuth.core import guided, guidedprompt, spans
from sleuth.core.chatwire import (
    ModelTurn,
    TextSink,
    ToolCallRequest,
    parse_body,
    raise_for_status,
    read_stream,
)
from sleuth.core.errors import ModelResponseError, ModelTimeout, ModelUnavailable
from sleuth.core.guided import GuidedFormat, ToolCalling
from sleuth.core.spans import chat_span
from sleuth.core.tracing import Tracing, inject_headers

log = logging.getLogger("sleuth.llm")


class ChatModel(Protocol):
    """What the loop asks of a model. ``tool_calling`` says how its tool calls are obtained
    (``native`` tool_calls or ``guided`` by a JSON Schema); None for a planner without a model
    (the router)."""

    name: str
    tool_calling: ToolCalling | None

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn: ...


class TextStreamingModel(ChatModel, Protocol):
    """A model that can hand its reply's text to ``on_text`` while the reply streams in
    (``streams_text`` says whether this one does: a streamed, native-tool-calling client)."""

    streams_text: bool

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextSink | None = None,
    ) -> ModelTurn: ...


class OpenAIChatModel:
    """Chat completions over HTTP (aiohttp: about a third of httpx's CPU per streamed call).

    The session is created on first use inside the running event loop; ``aclose`` ends it.
    ``tool_calling``: ``native`` (``tools`` and ``tool_choice`` in the request, the server's
    ``tool_calls`` in the reply) or ``guided`` (the same plus the schema of
    :mod:`sleuth.core.guided`, carried as ``guided_format`` says, at most ``max_calls`` calls per
    reply; the reply's text is parsed; ``tool_choice`` is then ``none``, which vLLM accepts
    without a tool-call parser). ``tracing``: each call is a ``chat`` span (see
    :mod:`sleuth.core.spans`); without it the active span's ``traceparent`` still goes out.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        timeout_s: float = 30.0,
        stream: bool = True,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        api_key: str | None = None,
        max_connections: int = 512,
        tool_choice: str | dict[str, Any] = "auto",
        response_format: dict[str, Any] | None = None,
        tool_calling: ToolCalling = "native",
        guided_format: GuidedFormat = "json_schema",
        max_calls: int = guided.DEFAULT_MAX_CALLS,
        tracing: Tracing | None = None,
    ) -> None:
        if tool_calling == "guided" and response_format is not None:
            raise ValueError("response_format and tool_calling=guided are exclusive")
        self.name = model
        self.tool_calling: ToolCalling | None = tool_calling
        self._guided_format = guided_format
        self._max_calls = max_calls
        self.base_url = base_url.rstrip("/")
        self._url = self.base_url + "/chat/completions"
        self._timeout_s = timeout_s
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._stream = stream
        self._params = {"temperature": temperature, "max_tokens": max_tokens}
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._max_connections = max_connections
        self._tool_choice = tool_choice
        self._response_format = response_format
        self._session: aiohttp.ClientSession | None = None
        self._tracing = tracing
        # A guided reply's text is JSON, not the answer: it is parsed whole, never relayed.
        self.streams_text = stream and tool_calling != "guided"

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def ping(self) -> str | None:
        """None when the server answers ``GET /models``, else why not (for readiness)."""
        try:
            timeout = aiohttp.ClientTimeout(total=2.0)
            async with self._client().get(self.base_url + "/models", timeout=timeout) as r:
                if r.status != 200:
                    return f"model server answered {r.status} on /models"
        except (aiohttp.ClientError, TimeoutError) as exc:
            return f"model server unreachable: {type(exc).__name__}"
        return None

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        if self.tool_calling == "guided":  # the grammar is invisible: the model is told the forms
            messages = guidedprompt.with_reply_instructions(messages, tools)
        body: dict[str, Any] = {"model": self.name, "messages": messages, **self._params}
        if tools:
            body["tools"] = tools
            # Guided: the schema decides; "none" keeps a server from parsing or forcing calls
            # (and is what vLLM accepts without a tool-call parser).
            body["tool_choice"] = "none" if self.tool_calling == "guided" else self._tool_choice
        if self.tool_calling == "guided":
            schema = guided.reply_schema(tools, self._max_calls)
            body["response_format"] = guided.response_format(schema, self._guided_format)
        elif self._response_format is not None:
            body["response_format"] = self._response_format
        return self._finish_body(body)

    def _finish_body(self, body: dict[str, Any]) -> dict[str, Any]:
        if self._stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextSink | None = None,
    ) -> ModelTurn:
        """One call. ``on_text`` (streamed, native calls only) receives the reply's text as it
        arrives, until the reply turns to tool calls. With tracing, the call is a ``chat`` span
        whose ``traceparent`` goes to the server."""
        body = self._body(messages, tools)
        sink = on_text if self.streams_text else None
        tracing = self._tracing
        if tracing is None or not tracing.enabled:
            return self._guided(await self._post(body, sink), messages)
        with chat_span(tracing, self.name, self.base_url, self._params, messages) as span:
            turn = self._guided(await self._post(body, sink), messages)
            _record_turn(span, turn, tracing.capture_content)
            return turn

    def _guided(self, turn: ModelTurn, messages: list[dict[str, Any]]) -> ModelTurn:
        if self.tool_calling == "guided":
            return _guided_turn(turn, guided.turn_index(messages))
        return turn

    async def _post(self, body: dict[str, Any], sink: TextSink | None) -> ModelTurn:
        started = time.perf_counter()
        headers = inject_headers({"Content-Type": "application/json"})
        try:
            async with self._client().post(
                self._url, data=json.dumps(body), timeout=self._timeout, headers=headers
            ) as response:
                if response.status != 200:
                    await raise_for_status(response)
                if self._stream:
                    return await read_stream(response, started, sink)
                return parse_body(await response.read())
        except TimeoutError as exc:
            raise ModelTimeout(f"model call timed out after {self._timeout_s:g} s") from exc
        except aiohttp.ClientError as exc:  # the text names the server's address: logged only
            log.warning("model server unreachable: %r", exc)
            raise ModelUnavailable(f"model server unreachable ({type(exc).__name__})") from exc
        except HttpProcessingError as exc:  # e.g. a header over aiohttp's limit: its text
            # quotes the bytes (a long stream line is chatwire.read_stream's, never aiohttp's)
            name = type(exc).__name__
            log.warning(
                "model server at %s sent a malformed HTTP message (%s)", self.base_url, name
            )
            raise ModelResponseError(
                f"model server sent a malformed HTTP message ({name})"
            ) from None


def _record_turn(span: Span, turn: ModelTurn, capture_content: bool) -> None:
    """What came back, on the ``chat`` span: usage, finish reason, time to first token, the
    number of tool calls (and the reply itself, captured)."""
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {
        spans.INPUT_TOKENS: turn.prompt_tokens,
        spans.OUTPUT_TOKENS: turn.completion_tokens,
        spans.TOOL_CALLS_REQUESTED: len(turn.tool_calls),
    }
    if turn.finish_reason:
        attributes[spans.FINISH_REASONS] = [turn.finish_reason]
    if turn.ttft_s is not None:
        attributes[spans.TTFT_MS] = round(turn.ttft_s * 1000, 3)
    if capture_content:
        attributes[spans.OUTPUT_MESSAGES] = spans.content_json([turn.assistant_message()])
    span.set_attributes(attributes)


def _guided_turn(turn: ModelTurn, index: int) -> ModelTurn:
    """The native-shaped turn of a guided reply (its text parsed into an answer or calls)."""
    if turn.tool_calls:
        raise ModelResponseError("guided request answered with native tool_calls")
    if turn.finish_reason == "length":
        raise guided.GuidedReplyError(
            "guided reply cut at max_tokens before its JSON was complete; raise max tokens",
            text=turn.content or "",
        )
    reply = guided.parse_reply(turn.content, index)
    return replace(
        turn,
        content=reply.answer,
        thought=reply.thought,
        tool_calls=tuple(ToolCallRequest(i, n, a) for i, n, a in reply.calls),
        finish_reason="tool_calls" if reply.calls else turn.finish_reason,
        extra={**turn.extra, "guided_text": turn.content or ""},
    )


__all__ = [
    "ChatModel",
    "ModelTurn",
    "OpenAIChatModel",
    "TextSink",
    "TextStreamingModel",
    "ToolCallRequest",
]
