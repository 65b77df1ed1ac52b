"""OpenAI-compatible front of the agent: ``POST /v1/chat/completions`` and ``GET /v1/models``.

The last message must be the user's question; earlier user and assistant messages are passed as
history (system and tool messages from the client are ignored: the agent has its own prompt and
tools). The agent's loop runs behind the endpoint; the answer is the assistant message, and the
non-streamed body carries the citations and trace under the extra key ``sleuth``.

With ``"stream": true`` the role chunk is sent at once; then the answer's text as the model
server streams it, token by token (the router's answer, and answers no model streamed, in one
piece when the loop has them), then the finish chunk (with the citations under ``sleuth``), the
usage chunk when ``stream_options.include_usage`` asks for it, and ``[DONE]``. When text of a model
reply was sent and that reply never completed (its stream cut and the retry failed, the request
timed out under it), the finish chunk says ``finish_reason: "length"`` (what OpenAI clients read as
"this text is cut") and ``sleuth.textCut: true``, never ``stop``. While the model and
the tools work, progress goes out as SSE comment lines, ``: sleuth {"kind": "tools", ...}``,
which OpenAI clients skip (and which keep idle-timeout proxies from cutting a long tool round).

A run that pauses before tool calls a person must approve (:mod:`sleuth.agent.approval`) ends
like any answer (``finish_reason: "stop"``): the assistant message says which calls wait, why,
until when, and what to send — the next user message ``approve apr_<id>`` or ``reject apr_<id>:
<reason>`` — and ``sleuth.approval`` holds the same as data (``id``, ``status: "pending"``,
``calls``, ``expiresAt``, ``approve``, ``reject``). That message, sent with the same or any
history, is the decision: the run goes on and its answer comes back as the reply.

A traced request's id is in the ``X-Sleuth-Trace-Id`` header (streamed too: headers go first)
and under ``sleuth.traceId`` in the body (streamed: in the finish chunk's ``sleuth`` part).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.types import Receive, Scope, Send

from sleuth.agent.access.caller import Caller, current_caller
from sleuth.agent.errors import RequestRejected
from sleuth.agent.events import AnswerText, Finished, Progress, RunListener, follow
from sleuth.agent.loop import AgentResult
from sleuth.agent.request_checks import Conversation, HistoryMessage, read_json
from sleuth.agent.service import AgentService, Overloaded
from sleuth.core.http.error_shapes import error_body, overloaded

router = APIRouter()


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: StrictStr | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(p["text"] for p in self.content if isinstance(p.get("text"), str))
        return ""


def _check_parts(messages: list[ChatMessage]) -> None:
    """Content parts as OpenAI has them: a ``text`` is a string, and a ``"type": "text"`` part
    has one (other parts, such as images, are accepted and ignored)."""
    for i, message in enumerate(messages):
        for j, part in enumerate(message.content if isinstance(message.content, list) else []):
            text = part.get("text")
            if isinstance(text, str) or (text is None and part.get("type") != "text"):
                continue
            field = f"messages.{i}.content.{j}.text"
            got = "missing" if text is None else f"{_json_type(text)}, not a string"
            said = f"{field}: a text part's text must be a string ({got})"
            raise RequestRejected(said, field=field)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None


class _AdmittedStream(StreamingResponse):
    """An SSE response that gives the admission slot back however it ends: complete, failed,
    or cancelled (the client went away) — even before its first chunk."""

    def __init__(
        self,
        content: AsyncIterator[str],
        release: Callable[[], None],
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(content, media_type="text/event-stream", headers=headers)
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


def _usage(result: AgentResult) -> dict[str, int]:
    trace = result.trace
    return {
        "prompt_tokens": trace.prompt_tokens,
        "completion_tokens": trace.completion_tokens,
        "total_tokens": trace.prompt_tokens + trace.completion_tokens,
    }


def _chunk(
    cid: str,
    model: str,
    delta: dict[str, Any],
    finish: str | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if extra is not None:
        body["sleuth"] = extra
    return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"


@router.get("/v1/models")
async def models(request: Request) -> dict[str, Any]:
    service: AgentService = request.app.state.service
    entry = {"id": service.name, "object": "model", "created": 0, "owned_by": "sleuth"}
    return {"object": "list", "data": [entry]}


def _conversation(body: ChatRequest) -> Conversation:
    _check_parts(body.messages)
    last = body.messages[-1]
    index = len(body.messages) - 1
    if last.role != "user" or not last.text().strip():
        raise RequestRejected(
            f"messages.{index}: the last message must be a non-empty user message",
            field=f"messages.{index}",
        )
    history = [
        HistoryMessage(m.role, m.text())
        for m in body.messages[:-1]
        if m.role in ("user", "assistant") and m.text()
    ]
    return Conversation(
        question=last.text(),
        history=history,
        question_field=f"messages.{index}.content",
        history_field="messages",
        history_count=index,
    )


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    request: Request, caller: Annotated[Caller, Depends(current_caller)]
) -> Response:
    service: AgentService = request.app.state.service
    endpoint = "chat_completions"
    try:
        body = await read_json(request, ChatRequest)
        conversation = _conversation(body)
        service.check(conversation)
    except RequestRejected as exc:
        service.rejected(exc.status)
        service.access.refused(caller, endpoint, "invalid", None)
        return error_body(exc.status, str(exc), exc.kind, exc.field)
    question, history = conversation.question, conversation.history_dicts()
    cid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
    model = service.name
    span = service.request_span("chat_completions", request.headers)
    sample = service.sample_of(caller, request.headers)
    try:
        service.admit(caller)
    except Overloaded as exc:
        span.fail("overloaded")
        service.access.refused(caller, endpoint, "overloaded", question)
        return overloaded(str(exc), exc.retry_after_s)
    if not body.stream:
        try:
            with span.running():
                result = await service.run(question, history, endpoint, sample, caller=caller)
        finally:
            service.release(caller)
        span.finish(result, question)
        part: dict[str, Any] = {"citations": result.citations, **span.body()}
        if result.approval is not None:
            part["approval"] = result.approval.as_json()
        if caller.trace:  # raw tool output: only for callers granted it
            part["trace"] = result.trace.model_dump(mode="json", by_alias=True)
        return JSONResponse(
            {
                "id": cid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": result.answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": _usage(result),
                "sleuth": part,
            },
            headers=span.headers(),
        )
    include_usage = bool((body.stream_options or {}).get("include_usage"))

    async def run(listener: RunListener) -> AgentResult:
        with span.running():
            result = await service.run(
                question, history, endpoint, sample, listener=listener, caller=caller
            )
        span.finish(result, question)
        return result

    async def events() -> AsyncIterator[str]:
        yield _chunk(cid, model, {"role": "assistant", "content": ""})
        result: AgentResult | None = None
        async for event in follow(run):
            if isinstance(event, AnswerText):
                yield _chunk(cid, model, {"content": event.text})
            elif isinstance(event, Progress):
                yield f": sleuth {json.dumps(event.as_json(), ensure_ascii=False)}\n\n"
            elif isinstance(event, Finished):
                result = event.result
        assert result is not None
        extra: dict[str, Any] = {"citations": result.citations, **span.body()}
        if result.text_cut:  # the text holds a cut reply: not "stop", which says complete
            extra["textCut"] = True
        if result.approval is not None:
            extra["approval"] = result.approval.as_json()
        yield _chunk(cid, model, {}, "length" if result.text_cut else "stop", extra)
        if include_usage:
            usage = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": _usage(result),
            }
            yield f"data: {json.dumps(usage)}\n\n"
        yield "data: [DONE]\n\n"

    def release() -> None:
        span.fail("cancelled")  # no-op when the run finished it
        service.release(caller)

    return _AdmittedStream(events(), release, span.headers())
