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
body that is not a chat completion) is not. Retrying is the caller's decision.

``tool_calling="guided"`` (:mod:`sleuth.core.guided`) adds a JSON Schema the reply must follow,
through the server's structured-output field, and parses the reply back into the same
:class:`ModelTurn`; a reply that does not parse raises
:class:`~sleuth.core.guided.GuidedReplyError` (a :class:`ModelResponseError`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import aiohttp
from opentelemetry.trace import Span

from sleuth.core import guided, spans
from sleuth.core.errors import ModelResponseError, ModelTimeout, ModelUnavailable
from sleuth.core.guided import GuidedFormat, ToolCalling
from sleuth.core.spans import chat_span
from sleuth.core.tracing import Tracing, inject_headers

log = logging.getLogger("sleuth.llm")

# Receives the text of a streamed reply piece by piece, as the server sends it.
TextSink = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    id: str
    name: str
    arguments_text: str


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """One assistant turn: text and/or tool calls, with usage and timing."""

    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ttft_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def assistant_message(self) -> dict[str, Any]:
        """The turn as the assistant message appended to the conversation."""
        # "" rather than null next to tool calls: llama.cpp's server rejects null and its chat
        # templates read the key; OpenAI and vLLM accept both.
        message: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_text},
                }
                for c in self.tool_calls
            ]
        return message


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


@dataclass(slots=True)
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


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
                    await _raise_for_status(response)
                if self._stream:
                    return await _read_stream(response, started, sink)
                return _parse_body(await response.read())
        except TimeoutError as exc:
            raise ModelTimeout(f"model call timed out after {self._timeout_s:g} s") from exc
        except aiohttp.ClientError as exc:  # the text names the server's address: logged only
            log.warning("model server unreachable: %r", exc)
            raise ModelUnavailable(f"model server unreachable ({type(exc).__name__})") from exc


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
    answer, calls = guided.parse_reply(turn.content, index)
    return replace(
        turn,
        content=answer,
        tool_calls=tuple(ToolCallRequest(i, n, a) for i, n, a in calls),
        finish_reason="tool_calls" if calls else turn.finish_reason,
        extra={**turn.extra, "guided_text": turn.content or ""},
    )


async def _raise_for_status(response: aiohttp.ClientResponse) -> None:
    text = (await response.read()).decode("utf-8", "replace")
    try:
        detail = json.loads(text).get("error", {}).get("message")
    except (ValueError, AttributeError):
        detail = None
    message = f"model server answered {response.status}"
    if isinstance(detail, str) and detail:  # the server's own error message
        message += f": {detail[:300]}"
    elif text.strip():  # a proxy's page or other text (may name hosts): logged only
        log.warning("%s: %s", message, text[:300])
    if response.status == 429 or response.status >= 500:
        raise ModelUnavailable(message, status=response.status)
    raise ModelResponseError(message, status=response.status)


def _int(value: Any, what: str) -> int:
    """A token count from the wire: an int (or a float that is one), else a ModelResponseError."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ModelResponseError(f"not a chat completion: {what} is {value!r}, not an integer")
    return int(value)


def _str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ModelResponseError(f"not a chat completion: {what} is {type(value).__name__}, not text")


def _dict(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    raise ModelResponseError(f"not a chat completion: {what} is {type(value).__name__}")


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise ModelResponseError(f"not a chat completion: {what} is {type(value).__name__}")


def _parse_body(raw: bytes) -> ModelTurn:
    try:
        data = json.loads(raw)
    except ValueError as exc:  # bad JSON or bytes that are not UTF-8
        raise ModelResponseError(f"not a chat completion: {exc}") from exc
    choices = _list(_dict(data, "the body").get("choices"), "choices")
    if not choices:
        raise ModelResponseError("not a chat completion: no choices")
    choice = _dict(choices[0], "choices[0]")
    message = _dict(choice.get("message"), "choices[0].message")
    calls = []
    for i, raw_call in enumerate(_list(message.get("tool_calls"), "message.tool_calls")):
        call = _dict(raw_call, f"tool_calls[{i}]")
        function = _dict(call.get("function"), f"tool_calls[{i}].function")
        name = _str(function.get("name"), f"tool_calls[{i}].function.name")
        if not name:
            raise ModelResponseError(f"not a chat completion: tool_calls[{i}] has no name")
        calls.append(
            ToolCallRequest(
                id=_str(call.get("id"), f"tool_calls[{i}].id") or f"call_{i}",
                name=name,
                arguments_text=_str(function.get("arguments"), f"tool_calls[{i}].arguments") or "",
            )
        )
    usage = _dict(data.get("usage"), "usage")
    return ModelTurn(
        content=_str(message.get("content"), "message.content"),
        tool_calls=tuple(calls),
        finish_reason=_str(choice.get("finish_reason"), "finish_reason"),
        prompt_tokens=_int(usage.get("prompt_tokens"), "usage.prompt_tokens"),
        completion_tokens=_int(usage.get("completion_tokens"), "usage.completion_tokens"),
    )


class StreamParser:
    """Server-sent events of a streamed chat completion, fed line by line, into one turn.

    Whatever bytes arrive, :meth:`feed` and :meth:`turn` either work or raise a
    :class:`ModelError`: a line that is not UTF-8 or not a JSON object, a field of the wrong
    type, a tool-call index that is not an integer are :class:`ModelResponseError`; a stream that
    ends without a ``finish_reason`` and without ``[DONE]`` was cut (the server or a proxy died
    mid-answer) and is :class:`ModelUnavailable` — retryable, never a truncated answer.
    ``on_text`` receives each content piece as it is fed, until the first tool-call delta.
    """

    def __init__(self, started: float, on_text: TextSink | None = None) -> None:
        self._started = started
        self._on_text = on_text
        self._content: list[str] = []
        self._partials: dict[int, _Partial] = {}
        self._finish: str | None = None
        self._done = False
        self._usage: dict[str, Any] = {}
        self.ttft_s: float | None = None

    def feed(self, raw: bytes) -> None:
        if not raw.startswith(b"data:"):
            return
        try:
            payload = raw[5:].strip().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelResponseError(f"stream chunk is not UTF-8: {raw[:80]!r}") from exc
        if payload == "[DONE]":
            self._done = True
            return
        if self.ttft_s is None:
            self.ttft_s = time.perf_counter() - self._started
        try:
            chunk = json.loads(payload)
        except ValueError as exc:
            raise ModelResponseError(f"unparseable stream chunk: {payload[:200]}") from exc
        chunk = _dict(chunk, "a stream chunk")
        self._usage = _dict(chunk.get("usage"), "usage") or self._usage
        for choice in _list(chunk.get("choices"), "choices"):
            choice = _dict(choice, "a stream choice")
            delta = _dict(choice.get("delta"), "delta")
            text = _str(delta.get("content"), "delta.content")
            if text:
                self._content.append(text)
                if self._on_text is not None and not self._partials:
                    self._on_text(text)
            for raw_call in _list(delta.get("tool_calls"), "delta.tool_calls"):
                call = _dict(raw_call, "a tool-call delta")
                index = call.get("index", 0)
                if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                    raise ModelResponseError(f"tool-call index {index!r} is not an integer")
                partial = self._partials.setdefault(index, _Partial())
                partial.id = _str(call.get("id"), "tool_calls.id") or partial.id
                function = _dict(call.get("function"), "tool_calls.function")
                partial.name = (
                    _str(function.get("name"), "tool_calls.function.name") or partial.name
                )
                arguments = _str(function.get("arguments"), "tool_calls.function.arguments")
                if arguments:
                    partial.arguments.append(arguments)
            self._finish = _str(choice.get("finish_reason"), "finish_reason") or self._finish

    def turn(self) -> ModelTurn:
        if self._finish is None and not self._done:
            raise ModelUnavailable(
                "the model's stream ended before its finish_reason or [DONE]: the answer was cut"
            )
        calls = []
        for i, p in sorted(self._partials.items()):
            if not p.name:
                raise ModelResponseError(f"stream tool call {i} has no name")
            calls.append(
                ToolCallRequest(
                    id=p.id or f"call_{i}", name=p.name, arguments_text="".join(p.arguments)
                )
            )
        return ModelTurn(
            content="".join(self._content) if self._content else None,
            tool_calls=tuple(calls),
            finish_reason=self._finish,
            prompt_tokens=_int(self._usage.get("prompt_tokens"), "usage.prompt_tokens"),
            completion_tokens=_int(self._usage.get("completion_tokens"), "usage.completion_tokens"),
            ttft_s=self.ttft_s,
        )


async def _read_stream(
    response: aiohttp.ClientResponse, started: float, on_text: TextSink | None
) -> ModelTurn:
    parser = StreamParser(started, on_text)
    async for raw in response.content:  # read to the end, so the connection goes back to the pool
        parser.feed(raw)
    return parser.turn()
