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
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

from sleuth.core.errors import ModelResponseError, ModelTimeout, ModelUnavailable


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
    """What the loop asks of a model."""

    name: str

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn: ...


@dataclass(slots=True)
class _Partial:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIChatModel:
    """Chat completions over HTTP (aiohttp: about a third of httpx's CPU per streamed call).

    The session is created on first use inside the running event loop; ``aclose`` ends it.
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
    ) -> None:
        self.name = model
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
            body["tool_choice"] = self._tool_choice
        if self._response_format is not None:
            body["response_format"] = self._response_format
        if self._stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn:
        body = self._body(messages, tools)
        started = time.perf_counter()
        try:
            async with self._client().post(
                self._url,
                data=json.dumps(body),
                timeout=self._timeout,
                headers={"Content-Type": "application/json"},
            ) as response:
                if response.status != 200:
                    await _raise_for_status(response)
                if self._stream:
                    return await _read_stream(response, started)
                return _parse_body(await response.read())
        except TimeoutError as exc:
            raise ModelTimeout(f"model call timed out after {self._timeout_s:g} s") from exc
        except aiohttp.ClientError as exc:
            raise ModelUnavailable(f"model server unreachable: {exc}") from exc


async def _raise_for_status(response: aiohttp.ClientResponse) -> None:
    text = (await response.read()).decode("utf-8", "replace")
    try:
        detail = json.loads(text).get("error", {}).get("message", text)
    except (ValueError, AttributeError):
        detail = text
    message = f"model server answered {response.status}: {str(detail)[:300]}"
    if response.status == 429 or response.status >= 500:
        raise ModelUnavailable(message, status=response.status)
    raise ModelResponseError(message, status=response.status)


def _parse_body(raw: bytes) -> ModelTurn:
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice["message"]
        calls = tuple(
            ToolCallRequest(
                id=c.get("id") or f"call_{i}",
                name=c["function"]["name"],
                arguments_text=c["function"].get("arguments") or "",
            )
            for i, c in enumerate(message.get("tool_calls") or [])
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelResponseError(f"not a chat completion: {exc!r}") from exc
    usage = data.get("usage") or {}
    return ModelTurn(
        content=message.get("content"),
        tool_calls=calls,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


async def _read_stream(response: aiohttp.ClientResponse, started: float) -> ModelTurn:
    content: list[str] = []
    partials: dict[int, _Partial] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    ttft: float | None = None
    async for raw in response.content:
        if not raw.startswith(b"data:"):
            continue
        payload = raw[5:].strip().decode("utf-8")
        if payload == "[DONE]":
            continue  # read to the end, so the connection goes back to the pool
        if ttft is None:
            ttft = time.perf_counter() - started
        try:
            chunk = json.loads(payload)
        except ValueError as exc:
            raise ModelResponseError(f"unparseable stream chunk: {payload[:200]}") from exc
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                partial = partials.setdefault(int(call.get("index", 0)), _Partial())
                partial.id = call.get("id") or partial.id
                function = call.get("function") or {}
                partial.name = function.get("name") or partial.name
                if function.get("arguments"):
                    partial.arguments.append(function["arguments"])
            finish = choice.get("finish_reason") or finish
    calls = tuple(
        ToolCallRequest(id=p.id or f"call_{i}", name=p.name, arguments_text="".join(p.arguments))
        for i, p in sorted(partials.items())
    )
    return ModelTurn(
        content="".join(content) if content else None,
        tool_calls=calls,
        finish_reason=finish,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        ttft_s=ttft,
    )
