"""The chat completions wire format: the turn a model call returns, and reading it off the wire.

:class:`ModelTurn` and :class:`ToolCallRequest` are what :mod:`sleuth.core.llm` hands the loop;
:func:`parse_body` reads a JSON reply, :class:`StreamParser` a streamed one (server-sent events),
:func:`raise_for_status` turns an error status into the right
:class:`~sleuth.core.errors.ModelError`. Whatever bytes arrive, they either parse or raise a
:class:`~sleuth.core.errors.ModelError`, whose message reaches the answer and the trace: it says
what was wrong, never the bytes themselves (those, and a proxy's text, go to the log).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from sleuth.core.errors import ModelResponseError, ModelUnavailable
from sleuth.core.http.json_body import MAX_JSON_DEPTH, nests_deeper_than

log = logging.getLogger("sleuth.llm")

# Receives the text of a streamed reply piece by piece, as the server sends it.
TextSink = Callable[[str], None]

# The longest line of a streamed reply (one server-sent event): a chunk of a real server is a few
# hundred bytes, a whole tool call's arguments at most a few kB.
MAX_STREAM_LINE = 1 << 20


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
    thought: str | None = None
    """What the model reasoned before it acted (a guided reply's ``thought``); never the answer."""

    def assistant_message(self) -> dict[str, Any]:
        """The turn as the assistant message appended to the conversation. A turn of calls with
        no text carries its thought as the text, as a native model writes its reasoning before
        its calls (so the next turn sees the plan it made)."""
        # "" rather than null next to tool calls: llama.cpp's server rejects null and its chat
        # templates read the key; OpenAI and vLLM accept both.
        text = self.content or (self.thought if self.tool_calls else None)
        message: dict[str, Any] = {"role": "assistant", "content": text or ""}
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


@dataclass(slots=True)
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


async def raise_for_status(response: aiohttp.ClientResponse) -> None:
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
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value != int(value)
    ):
        raise ModelResponseError(
            f"not a chat completion: {what} is {repr(value)[:40]}, not an integer"
        )
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


def _loads(raw: bytes, what: str) -> Any:
    """JSON from the model server, or a :class:`ModelResponseError` saying what was wrong (not
    the bytes: those are logged). Nesting is bounded as on the services' own intake."""
    if nests_deeper_than(raw, MAX_JSON_DEPTH):
        raise ModelResponseError(f"{what} nests more than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        log.warning("%s from the model server is not UTF-8: %r", what, raw[:200])
        raise ModelResponseError(
            f"{what} is not UTF-8 (invalid byte at offset {exc.start})"
        ) from None
    except ValueError as exc:  # e.g. a proxy's page: logged, never in the answer
        log.warning("%s from the model server is not JSON: %r", what, raw[:200])
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise ModelResponseError(f"{what} is not JSON ({reason})") from None


def parse_body(raw: bytes) -> ModelTurn:
    try:
        data = _loads(raw, "the body")
    except ModelResponseError as exc:
        raise ModelResponseError(f"not a chat completion: {exc}") from None
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
        payload = raw[5:].strip()
        if payload == b"[DONE]":
            self._done = True
            return
        if self.ttft_s is None:
            self.ttft_s = time.perf_counter() - self._started
        chunk = _dict(_loads(payload, "a stream chunk"), "a stream chunk")
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


async def read_stream(
    response: aiohttp.ClientResponse, started: float, on_text: TextSink | None
) -> ModelTurn:
    """The streamed turn, read as the bytes arrive and cut into lines here: one wake-up per read
    rather than per line, and a line over :data:`MAX_STREAM_LINE` is the server's error (a
    :class:`ModelResponseError`), not the HTTP client's."""
    parser = StreamParser(started, on_text)
    buffer = bytearray()
    async for data in response.content.iter_any():  # to the end: the connection is reused
        end = data.rfind(b"\n")
        if end < 0:
            buffer += data
        else:
            lines = (bytes(buffer) + data[:end] if buffer else data[:end]).split(b"\n")
            buffer[:] = data[end + 1 :]
            if len(lines[0]) > MAX_STREAM_LINE or (  # only the first line holds earlier reads
                len(data) > MAX_STREAM_LINE and max(map(len, lines)) > MAX_STREAM_LINE
            ):
                raise ModelResponseError(f"a stream line is over {MAX_STREAM_LINE} bytes")
            for line in lines:
                parser.feed(line)
        if len(buffer) > MAX_STREAM_LINE:
            raise ModelResponseError(f"a stream line is over {MAX_STREAM_LINE} bytes")
    if buffer:
        parser.feed(bytes(buffer))
    return parser.turn()
