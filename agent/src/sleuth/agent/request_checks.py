"""What a request to the agent may carry: its JSON body parsed strictly, its conversation checked.

One policy for ``/v1/query``, ``/v1/chat/completions`` and the A2A endpoint ``/a2a`` (the body's
size and read time are checked earlier, by :class:`sleuth.core.http.request_guard.RequestGuard`):

- the body is JSON (``Content-Type: application/json``, or none), read by
  :func:`sleuth.core.http.json_body.parse_json_body` (UTF-8, nesting at most 64 levels, no lone
  surrogate in any string: 400, or 422 naming the field), holding an object that validates
  **strictly** against the endpoint's model (``"stream": "yes"`` is not a boolean);
- the question is not blank and has at most ``limits.maxQuestionChars`` characters;
- at most ``limits.maxHistoryMessages`` earlier messages, at most ``limits.maxHistoryChars``
  characters in all;
- when the model's context length is known (``model.maxModelLen``), the prompt — system prompt,
  tool descriptions, history and question — estimated at one token per 4 UTF-8 bytes, must leave
  ``model.maxTokens`` for the answer.

Every refusal is a :class:`~sleuth.agent.errors.RequestRejected` naming the field and the limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from sleuth.agent.errors import RequestRejected
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.http.json_body import JsonBodyError, parse_json_body

M = TypeVar("M", bound=BaseModel)

BYTES_PER_TOKEN = 4
_JSON_TYPES = ("application/json",)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


async def read_json(request: Request, model: type[M]) -> M:
    """The body as ``model``, validated strictly; a :class:`RequestRejected` otherwise."""
    media = _media_type(request)
    if media and media not in _JSON_TYPES and not media.endswith("+json"):
        raise RequestRejected(
            f"the body must be JSON (Content-Type: application/json), not {media[:100]}",
            status=415,
            kind="unsupported_media_type",
        )
    try:
        data = parse_json_body(await request.body())
    except JsonBodyError as err:  # not UTF-8 or JSON, nested too deep, a lone surrogate
        raise RequestRejected(str(err), status=err.status, field=err.field) from None
    if not isinstance(data, dict):
        raise RequestRejected(f"the body must be a JSON object, not {type(data).__name__}")
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        message = f"{field}: {first['msg']}" if field else str(first["msg"])
        raise RequestRejected(message, field=field) from None


@dataclass(frozen=True, slots=True)
class HistoryMessage:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """A request's question and history, with the names of their fields in that request."""

    question: str
    history: Sequence[HistoryMessage]
    question_field: str
    history_field: str
    history_count: int  # earlier messages in the request, the ones the agent ignores included

    def history_dicts(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.history]


@dataclass(frozen=True, slots=True)
class PromptBudget:
    """The model's window: its length, what the answer needs, what every prompt already holds."""

    max_model_len: int
    max_tokens: int
    fixed_bytes: int  # system prompt and tool descriptions

    def tokens(self, conversation: Conversation) -> int:
        size = self.fixed_bytes + len(conversation.question.encode())
        size += sum(len(m.content.encode()) for m in conversation.history)
        return math.ceil(size / BYTES_PER_TOKEN)


def check_conversation(
    conversation: Conversation, limits: AgentLimitsSpec, budget: PromptBudget | None
) -> None:
    """Raise :class:`RequestRejected` when the conversation breaks a limit."""
    question = conversation.question
    qfield, hfield = conversation.question_field, conversation.history_field
    if not question.strip():
        raise RequestRejected(f"{qfield}: the question is empty", field=qfield)
    if len(question) > limits.max_question_chars:
        raise RequestRejected(
            f"{qfield}: {len(question)} characters, over the limit of "
            f"{limits.max_question_chars} (limits.maxQuestionChars)",
            field=qfield,
        )
    if conversation.history_count > limits.max_history_messages:
        raise RequestRejected(
            f"{hfield}: {conversation.history_count} earlier messages, over the limit of "
            f"{limits.max_history_messages} (limits.maxHistoryMessages)",
            field=hfield,
        )
    total = sum(len(m.content) for m in conversation.history)
    if total > limits.max_history_chars:
        raise RequestRejected(
            f"{hfield}: {total} characters of history, over the limit of "
            f"{limits.max_history_chars} (limits.maxHistoryChars)",
            field=hfield,
        )
    if budget is None:
        return
    tokens = budget.tokens(conversation)
    allowed = budget.max_model_len - budget.max_tokens
    if tokens > allowed:
        raise RequestRejected(
            f"the prompt is about {tokens} tokens; the model takes {budget.max_model_len} "
            f"(model.maxModelLen) of which {budget.max_tokens} are kept for the answer "
            "(model.maxTokens): shorten the question or the history",
            status=413,
            field=hfield if conversation.history else qfield,
            kind="request_too_large",
        )


__all__ = [
    "Conversation",
    "HistoryMessage",
    "PromptBudget",
    "check_conversation",
    "read_json",
]
