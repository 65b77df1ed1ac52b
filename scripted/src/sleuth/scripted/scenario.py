"""Scenarios for the scripted model server: which response answers which request, and how fast.

A :class:`Scenario` is plain data (pydantic), so it is written in Python or loaded from a JSON or
YAML file with :func:`load_scenario`. Selection of the response for one chat completions request:

1. ``rules`` are tried in order; the first whose :class:`Match` fits the request answers it.
2. Otherwise ``turns`` answer by position. With ``turnSelection: position`` (the default) the
   response is ``turns[k]`` where ``k`` is the number of assistant messages already in the request,
   so a conversation's first model call gets ``turns[0]``, the call after the first tool round gets
   ``turns[1]``, and so on: stateless, hence safe with many concurrent conversations. With
   ``turnSelection: sequential`` the server hands out ``turns`` in arrival order, one per request.
3. When no turn is left, ``fallback`` answers (default: a plain text reply saying the script ran
   out, so a broken test fails on the content rather than hanging).

Timing comes from ``latency`` (:class:`LatencyProfile`): the server waits the time to first token
(a piecewise-linear function of prompt tokens), then ``perTokenMs`` per further completion token;
a turn may add ``delayMs``. Tokens are estimated as ``ceil(characters / 4)`` of the JSON of the
messages and tools (no tokenizer, nothing downloaded).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from sleuth.core import guided


class _Data(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ScriptedToolCall(_Data):
    """One tool call the scripted model emits.

    ``arguments`` is a mapping (sent as its JSON text) or a string sent verbatim, which is how a
    test scripts malformed arguments such as ``'{"query": '``.
    """

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = Field(default=None, description="Call id; generated when omitted.")

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class ScriptedResponse(_Data):
    """What the model answers: text, tool calls (several = parallel calls), or an HTTP error."""

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    delay_ms: float = Field(default=0.0, ge=0, description="Extra wait before the first token.")
    status: int = Field(
        default=200, ge=200, le=599, description="HTTP status; >= 400 scripts a failing turn."
    )
    error_message: str = "scripted failure"
    completion_tokens: int | None = Field(
        default=None, ge=1, description="Tokens to simulate; estimated from the text when omitted."
    )
    finish_reason: str | None = Field(
        default=None, description="Defaults to tool_calls when there are calls, else stop."
    )
    cut_after: int | None = Field(
        default=None,
        ge=0,
        description="Streamed replies only: send the role chunk and the first N deltas, then "
        "end the stream with no finish_reason and no [DONE] (a server or proxy that died "
        "mid-answer).",
    )
    thought: str | None = Field(
        default=None,
        description="To a guided request: the reply's thought (written before its calls or "
        "answer); ignored otherwise.",
    )
    raw: bool = Field(
        default=False,
        description="To a request with a JSON Schema: send content verbatim, unchecked (a reply "
        "a server cut short); otherwise turns are written in the guided form and checked.",
    )

    def estimated_completion_tokens(self) -> int:
        if self.completion_tokens is not None:
            return self.completion_tokens
        text = self.content or ""
        text += "".join(call.name + call.arguments_text() for call in self.tool_calls)
        return max(1, estimate_tokens(text))


class Match(_Data):
    """Conditions on a request; all given conditions must hold (substrings are case-sensitive)."""

    last_message_contains: str | None = Field(
        default=None, description="Substring of the content of the last message."
    )
    last_user_contains: str | None = Field(
        default=None, description="Substring of the content of the last user message."
    )
    system_contains: str | None = Field(
        default=None, description="Substring of the system message(s)."
    )
    any_message_contains: str | None = Field(
        default=None, description="Substring of any message's content."
    )
    json_mode: bool | None = Field(
        default=None, description="True: only requests with response_format json_object/schema."
    )
    tool_offered: str | None = Field(
        default=None,
        description="Name of a tool that must be offered: in the request's tools, or in the "
        "schema of a guided request.",
    )
    position: int | None = Field(
        default=None, ge=0, description="Number of assistant messages already in the request."
    )

    def matches(self, request: dict[str, Any]) -> bool:
        messages: list[dict[str, Any]] = request.get("messages") or []
        if self.position is not None and assistant_count(messages) != self.position:
            return False
        if self.last_message_contains is not None and (
            not messages or self.last_message_contains not in content_text(messages[-1])
        ):
            return False
        if self.last_user_contains is not None:
            users = [m for m in messages if m.get("role") == "user"]
            if not users or self.last_user_contains not in content_text(users[-1]):
                return False
        if self.system_contains is not None:
            system = "\n".join(content_text(m) for m in messages if m.get("role") == "system")
            if self.system_contains not in system:
                return False
        if self.any_message_contains is not None and not any(
            self.any_message_contains in content_text(m) for m in messages
        ):
            return False
        if self.json_mode is not None and is_json_mode(request) != self.json_mode:
            return False
        if self.tool_offered is not None:
            names = {t.get("function", {}).get("name") for t in request.get("tools") or []}
            schema = guided.schema_of_request(request)
            if schema is not None:  # a guided request offers its tools in the schema
                names.update(guided.schema_tool_names(schema))
            if self.tool_offered not in names:
                return False
        return True


class Rule(_Data):
    """When ``match`` fits a request, answer with ``response``."""

    match: Match
    response: ScriptedResponse


class LatencyProfile(_Data):
    """Simulated timing: TTFT as a piecewise-linear function of prompt tokens, then per token.

    ``ttftPoints`` is a list of ``[promptTokens, milliseconds]`` pairs sorted by tokens; below the
    first point the first value holds, above the last the last segment's slope continues. The
    default is zero latency everywhere.
    """

    ttft_points: list[tuple[int, float]] = Field(default_factory=lambda: [(0, 0.0)])
    per_token_ms: float = Field(default=0.0, ge=0)

    def ttft_ms(self, prompt_tokens: int) -> float:
        points = sorted(self.ttft_points)
        if len(points) == 1 or prompt_tokens <= points[0][0]:
            return max(0.0, points[0][1])
        for (x0, y0), (x1, y1) in itertools.pairwise(points):
            if prompt_tokens <= x1:
                return y0 + (y1 - y0) * (prompt_tokens - x0) / max(1, x1 - x0)
        (x0, y0), (x1, y1) = points[-2], points[-1]
        return max(0.0, y1 + (y1 - y0) * (prompt_tokens - x1) / max(1, x1 - x0))

    def total_ms(self, prompt_tokens: int, completion_tokens: int, delay_ms: float = 0.0) -> float:
        """Simulated wall time of one non-streamed call (what a benchmark calls ideal)."""
        return (
            delay_ms
            + self.ttft_ms(prompt_tokens)
            + self.per_token_ms * max(0, completion_tokens - 1)
        )


def seed_latency_profile(per_token_ms: float = 5.0) -> LatencyProfile:
    """The seed article's Llama-3.1-70B on 4xH100 figures: TTFT 150 ms below 4k, 220 ms at 8k."""
    return LatencyProfile(
        ttft_points=[(0, 150.0), (4000, 150.0), (8000, 220.0)], per_token_ms=per_token_ms
    )


class EmbeddingScript(_Data):
    """Vectors for ``/v1/embeddings``: fixed ones by exact input text, else a hash-seeded vector."""

    dimensions: int = Field(default=16, ge=1, le=8192)
    vectors: dict[str, list[float]] = Field(default_factory=dict)


class RerankScript(_Data):
    """Answers of the rerank routes (``/rerank``, ``/v1/rerank``, ``/v2/rerank``).

    A document's score is the first ``scores`` entry whose key is a substring of it; otherwise
    the share of the query's words (lower-cased, 3 letters or more) that appear in it. No model
    runs: this tests the protocol and the tool's handling, not ranking quality.
    """

    scores: dict[str, float] = Field(default_factory=dict)
    delay_ms: float = Field(default=0.0, ge=0, description="Wait before answering.")
    status: int = Field(default=200, ge=200, le=599, description=">= 400 scripts a failure.")
    malformed: bool = Field(
        default=False, description="Answer a body that names a document index out of range."
    )

    def score(self, query: str, document: str) -> float:
        for key, value in self.scores.items():
            if key in document:
                return value
        words = {w for w in re.findall(r"\w+", query.lower()) if len(w) >= 3}
        if not words:
            return 0.0
        text = document.lower()
        return round(sum(1 for w in words if w in text) / len(words), 4)


class Scenario(_Data):
    """A script for the scripted model server (see the module docstring)."""

    model: str = Field(default="scripted", description="Name served by /v1/models.")
    turns: list[ScriptedResponse] = Field(default_factory=list)
    rules: list[Rule] = Field(default_factory=list)
    turn_selection: Literal["position", "sequential"] = "position"
    fallback: ScriptedResponse = Field(
        default_factory=lambda: ScriptedResponse(content="[scripted server: no turn left]")
    )
    latency: LatencyProfile = Field(default_factory=LatencyProfile)
    embeddings: EmbeddingScript = Field(default_factory=EmbeddingScript)
    rerank: RerankScript = Field(default_factory=RerankScript)


def estimate_tokens(text: str) -> int:
    """Token estimate used for usage figures and TTFT: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / 4)


def prompt_tokens(request: dict[str, Any]) -> int:
    text = json.dumps(request.get("messages") or [], ensure_ascii=False)
    if request.get("tools"):
        text += json.dumps(request["tools"], ensure_ascii=False)
    return estimate_tokens(text)


def content_text(message: dict[str, Any]) -> str:
    """The text of a message's content, whether a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def assistant_count(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


def is_json_mode(request: dict[str, Any]) -> bool:
    fmt = request.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") in {"json_object", "json_schema"}


def load_scenario(path: str | Path) -> Scenario:
    """Load a scenario from a JSON or YAML file (camelCase or snake_case keys)."""
    return Scenario.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
