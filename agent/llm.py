"""The model client: one chat completions call against an OpenAI-compatible server (vLLM).

:class:`ChatModel` is what the loop needs; :class:`OpenAIChatModel` implements it over HTTP with
httpx, streaming (server-sent events, time to first token measured) or not. Tool calls come back
as :class:`ToolCallRequest` with the raw argument text: parsing it is the loop's job, so that
malformed JSON becomes an observation rather than an exception.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from sleuth.agent.errors import ModelResponseError, ModelUnavailable


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
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
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
    """Chat completions over HTTP. Owns no client unless none is given (then call ``aclose``)."""

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
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.name = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._timeout = httpx.Timeout(timeout_s)
        self._stream = stream
        self._params = {"temperature": temperature, "max_tokens": max_tokens}
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=256)
        )

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.name, "messages": messages, **self._params}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
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
            if self._stream:
                async with self._client.stream(
                    "POST", self._url, json=body, headers=self._headers, timeout=self._timeout
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        _raise_for_status(response)
                    return await _read_stream(response, started)
            response = await self._client.post(
                self._url, json=body, headers=self._headers, timeout=self._timeout
            )
        except httpx.TimeoutException as exc:
            raise ModelUnavailable(f"model call timed out ({type(exc).__name__})") from exc
        except httpx.TransportError as exc:
            raise ModelUnavailable(f"model server unreachable: {exc}") from exc
        _raise_for_status(response)
        return _parse_body(response)


def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code == 200:
        return
    try:
        detail = response.json().get("error", {}).get("message", response.text)
    except (ValueError, AttributeError):
        detail = response.text
    message = f"model server answered {response.status_code}: {str(detail)[:300]}"
    if response.status_code == 429 or response.status_code >= 500:
        raise ModelUnavailable(message, status=response.status_code)
    raise ModelResponseError(message, status=response.status_code)


def _parse_body(response: httpx.Response) -> ModelTurn:
    try:
        data = response.json()
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


async def _read_stream(response: httpx.Response, started: float) -> ModelTurn:
    content: list[str] = []
    partials: dict[int, _Partial] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    ttft: float | None = None
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            break
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
