"""The OpenAI wire format of the scripted server's answers: a scripted completion as a JSON body
or as server-sent-event chunks written on the latency profile's schedule, and the error shape."""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import JSONResponse

from sleuth.scripted.scenario import ScriptedResponse, prompt_tokens


def error(status: int, message: str, param: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return JSONResponse(body, status_code=status)


def split_text(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size = math.ceil(len(text) / pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


class Completion:
    """One scripted completion rendered in both wire forms."""

    def __init__(self, request: dict[str, Any], response: ScriptedResponse, model: str) -> None:
        self.request = request
        self.response = response
        self.model = model
        self.id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        self.created = int(time.time())
        self.prompt_tokens = prompt_tokens(request)
        self.completion_tokens = response.estimated_completion_tokens()
        self.call_ids = [c.id or f"call_{uuid.uuid4().hex[:12]}" for c in response.tool_calls]
        self.finish_reason = response.finish_reason or (
            "tool_calls" if response.tool_calls else "stop"
        )

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.response.content}
        if self.response.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()},
                }
                for call_id, call in zip(self.call_ids, self.response.tool_calls, strict=True)
            ]
        return message

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": self.message(),
                    "finish_reason": self.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": self.usage(),
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    def deltas(self) -> list[dict[str, Any]]:
        """Content pieces, then per call a header delta and argument fragments."""
        budget = max(1, self.completion_tokens)
        out: list[dict[str, Any]] = [
            {"content": piece} for piece in split_text(self.response.content or "", budget)
        ]
        for index, (call_id, call) in enumerate(
            zip(self.call_ids, self.response.tool_calls, strict=True)
        ):
            head = {"index": index, "id": call_id, "type": "function"}
            out.append({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            for fragment in split_text(call.arguments_text(), 4):
                out.append({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        return out


async def sleep_until(deadline: float) -> None:
    """Sleep until the event loop's clock reads ``deadline`` (no drift across many sleeps)."""
    delay = deadline - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


async def stream_chunks(
    completion: Completion, first_at: float, per_token_s: float, usage: bool
) -> AsyncIterator[str]:
    """Chunks on schedule; chunks already due (a busy server) go out in one write."""
    deltas = completion.deltas()
    gap = per_token_s * max(0, completion.completion_tokens - 1) / max(1, len(deltas) - 1)
    role = completion.chunk({"role": "assistant", "content": ""})
    pending = [(first_at + i * gap, completion.chunk(d)) for i, d in enumerate(deltas)]
    cut = completion.response.cut_after
    if cut is not None:  # the server dies after these: no finish chunk, no [DONE]
        pending = pending[:cut]
    await sleep_until(first_at)
    out = [role]
    loop = asyncio.get_running_loop()
    index = 0
    while index < len(pending):
        due, text = pending[index]
        if due > loop.time() and out:
            yield "".join(out)
            out = []
            await sleep_until(due)
        out.append(text)
        index += 1
    if cut is not None:
        yield "".join(out)
        return
    out.append(completion.chunk({}, completion.finish_reason))
    if usage:
        body = {
            "id": completion.id,
            "object": "chat.completion.chunk",
            "created": completion.created,
            "model": completion.model,
            "choices": [],
            "usage": completion.usage(),
        }
        out.append(f"data: {json.dumps(body)}\n\n")
    out.append("data: [DONE]\n\n")
    yield "".join(out)


__all__ = ["Completion", "error", "sleep_until", "split_text", "stream_chunks"]
