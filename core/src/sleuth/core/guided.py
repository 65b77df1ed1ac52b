"""Guided tool calling: the tool-call format forced by a JSON Schema instead of a native parser.

A model server without a tool-call parser for its model (llama.cpp's servers with Qwen2.5, vLLM
without ``--tool-call-parser``) still constrains output to a JSON Schema (structured output).
In guided mode the model client sends ``tools`` as usual, so the model's own chat template shows
them the way the model was trained, plus the schema of :func:`reply_schema`; the reply is one JSON
object that states its reasoning and its decision before it acts::

    {"thought": "A greeting.", "needs_tool": false, "answer": "Hello! ..."}
    {"thought": "A count of contracts.", "needs_tool": true, "calls_now": 1,
     "tool_calls": [{"name": "sql_query", "arguments": {...}}]}
    {"thought": "A total and a clause: two parts.", "needs_tool": true, "calls_now": 2,
     "tool_calls": [{"name": "sql_query", ...}, {"name": "vector_search", ...}]}

The order of the fields is the point: a decoder writes left to right, so the model says what
the question asks for and where that is found (``thought``, at most :data:`THOUGHT_MAX_CHARS`
characters) before it decides whether a tool is needed, and decides how many calls to make
*now* before it writes them. With the first key deciding (the shipped schema until issue 33) a
model whose chat template had just listed tools always called one (0 of 8 no-tool questions
answered) and closed its list after one call (0 of 3 parallel questions). ``needs_tool`` makes
the decision an explicit yes/no after the thought, and ``calls_now`` (1 to ``max_calls``, the
list then exactly that long) the number of calls. The decision follows the thought, so what
the thought is asked to say decides the branch: :mod:`sleuth.core.guidedprompt` holds the
instructions and examples the model reads (and why they read as they do). ``name`` is a
constant per tool and ``arguments`` that tool's own argument schema. The thought goes to the
trace (and the ReAct transcript), never into the answer.

:func:`parse_reply` turns the reply into a :class:`GuidedReply`, which the model client makes the
same :class:`~sleuth.core.llm.ModelTurn` the native path produces (tool calls with ids
``call_<turn>_<index>``), so the loop, the trace and the evals do not change; the conversation
keeps its native shape (assistant ``tool_calls``, ``tool`` messages), which tool-aware chat
templates render. It also reads the forms a server that ignored the schema may write: no
thought, or one call as ``{"name": ..., "arguments": {...}}``.

Two wire forms carry the schema (:data:`GuidedFormat`): ``json_schema`` is OpenAI's
``response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`` (vLLM, llama.cpp's
``llama-server``); ``json_object`` is ``response_format: {"type": "json_object", "schema": ...}``
(llama-cpp-python's server, which refuses the first form, and ``llama-server``).

This module is the one home of the reply schema: the agent's loop, the TSA runner and
``sleuth ask --planner local`` all reach it through :class:`~sleuth.core.llm.OpenAIChatModel`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth.core.errors import ModelResponseError

ToolCalling = Literal["native", "guided"]
GuidedFormat = Literal["json_schema", "json_object"]
SCHEMA_NAME = "sleuth_turn"
DEFAULT_MAX_CALLS = 4
"""Calls one guided reply may hold (parallel calls); 1 when the agent runs calls one by one."""
THOUGHT = "thought"
NEEDS_TOOL = "needs_tool"
CALLS_NOW = "calls_now"
ANSWER = "answer"
CALLS = "tool_calls"
THOUGHT_MAX_CHARS = 160
"""A thought is a sentence, not an essay: each character costs decoding time on a CPU."""


class GuidedReplyError(ModelResponseError):
    """A guided reply that is not the JSON the schema asks for (cut by max_tokens, or a server
    that ignored the schema); ``text`` is what the model wrote."""

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


@dataclass(frozen=True, slots=True)
class GuidedReply:
    """A parsed guided reply: the thought, and the answer or the calls ``(id, name, args)``."""

    thought: str | None
    answer: str | None
    calls: list[tuple[str, str, str]] = field(default_factory=list)


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    function = tool.get("function") if tool.get("type") == "function" else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ValueError(f"tools: not an OpenAI function tool: {str(tool)[:200]}")
    return function


def _arguments_schema(function: dict[str, Any]) -> dict[str, Any]:
    parameters = function.get("parameters")
    if not isinstance(parameters, dict) or not parameters:
        return {"type": "object", "properties": {}, "additionalProperties": False}
    return parameters


def _call_schema(tool: dict[str, Any]) -> dict[str, Any]:
    function = _function(tool)
    return {
        "type": "object",
        "properties": {
            "name": {"const": function["name"]},
            "arguments": _arguments_schema(function),
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def _reply(fields: dict[str, Any]) -> dict[str, Any]:
    """An object of ``fields``, all required, in this order (the order the decoder writes)."""
    thought = {"type": "string", "maxLength": THOUGHT_MAX_CHARS}
    properties = {THOUGHT: thought, **fields}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def reply_schema(tools: list[dict[str, Any]], max_calls: int = DEFAULT_MAX_CALLS) -> dict[str, Any]:
    """The JSON Schema of one guided reply for the OpenAI ``tools`` list (see the module doc)."""
    if max_calls < 1:
        raise ValueError(f"max_calls must be at least 1, got {max_calls}")
    answer = _reply({NEEDS_TOOL: {"const": False}, ANSWER: {"type": "string"}})
    calls = [_call_schema(tool) for tool in tools]
    if not calls:
        return answer
    item = calls[0] if len(calls) == 1 else {"anyOf": calls}
    planned = [
        _reply(
            {
                NEEDS_TOOL: {"const": True},
                CALLS_NOW: {"const": n},
                CALLS: {"type": "array", "items": item, "minItems": n, "maxItems": n},
            }
        )
        for n in range(1, max_calls + 1)
    ]
    return {"anyOf": [answer, *planned]}


def response_format(schema: dict[str, Any], fmt: GuidedFormat) -> dict[str, Any]:
    """The ``response_format`` request field carrying ``schema`` in the wire form ``fmt``."""
    if fmt == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}}


def schema_of_request(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a chat request's ``response_format`` carries, in either form, or None."""
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    schema: Any = None
    if fmt.get("type") == "json_object":
        schema = fmt.get("schema")
    elif fmt.get("type") == "json_schema" and isinstance(fmt.get("json_schema"), dict):
        schema = fmt["json_schema"].get("schema")
    return schema if isinstance(schema, dict) else None


def _branches(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in schema.get("anyOf", [schema]) if isinstance(b, dict)]


def is_reply_schema(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` is one :func:`reply_schema` wrote (an answer branch is always there)."""
    return any(
        list(b.get("properties", {})) == [THOUGHT, NEEDS_TOOL, ANSWER] for b in _branches(schema)
    )


def schema_tool_names(schema: dict[str, Any]) -> list[str]:
    """Tool names a :func:`reply_schema` offers, in order."""
    names: list[str] = []
    for branch in _branches(schema):
        items = branch.get("properties", {}).get(CALLS, {}).get("items", {})
        for call in items.get("anyOf", [items]):
            const = call.get("properties", {}).get("name", {}).get("const")
            if isinstance(const, str) and const not in names:
                names.append(const)
    return names


def encode_calls(calls: list[tuple[str, Any]], thought: str = "") -> str:
    """The guided JSON of tool calls ``(name, arguments)``. Arguments that are not a JSON object
    (text a model wrote) are kept as text."""
    out = []
    for name, arguments in calls:
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                parsed = arguments
            arguments = parsed
        out.append({"name": name, "arguments": arguments})
    reply = {THOUGHT: thought, NEEDS_TOOL: True, CALLS_NOW: len(out), CALLS: out}
    return json.dumps(reply, ensure_ascii=False)


def encode_answer(text: str, thought: str = "") -> str:
    return json.dumps({THOUGHT: thought, NEEDS_TOOL: False, ANSWER: text}, ensure_ascii=False)


_ANSWER_BEGUN = re.compile(
    r'\s*\{\s*(?:"thought"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*)?'
    r'(?:"needs_tool"\s*:\s*false|"answer"\s*:)',
    re.DOTALL,
)


def began_answer(text: str) -> bool:
    """Whether a reply (perhaps cut at max_tokens) had chosen the answer: ``needs_tool`` false
    after its thought (or, without one, ``answer`` first). The decision was made then, whatever
    the cut took away."""
    return _ANSWER_BEGUN.match(text) is not None


def turn_index(messages: list[dict[str, Any]]) -> int:
    """Assistant turns already in the conversation: the ``<turn>`` of guided call ids."""
    return sum(1 for m in messages if m.get("role") == "assistant")


def _forms_error(raw: str) -> GuidedReplyError:
    return GuidedReplyError(
        'guided reply is neither {"thought": text, "needs_tool": false, "answer": text} nor '
        '{"thought": text, "needs_tool": true, "calls_now": n, "tool_calls": [{"name": tool, '
        f'"arguments": {{...}}}}, ...]}}: {raw[:200]!r}',
        text=raw,
    )


def parse_reply(text: str | None, turn: int) -> GuidedReply:
    """The thought and the answer or the calls of a guided reply; calls get the ids
    ``call_<turn>_<index>`` and their arguments as JSON text.

    Raises :class:`GuidedReplyError` when the text is none of the forms (see the module doc). A
    call of a tool that was not offered is kept (the loop tells the model it is unknown), as on
    the native path.
    """
    raw = (text or "").strip()
    try:  # not strict: grammar-constrained servers (llama.cpp) let raw newlines into strings
        data = json.loads(raw, strict=False)
    except ValueError as exc:
        raise GuidedReplyError(
            f"guided reply is not JSON ({exc}): {raw[:200]!r}", text=raw
        ) from exc
    if not isinstance(data, dict):
        raise GuidedReplyError(f"guided reply is not a JSON object: {raw[:200]!r}", text=raw)
    thought = data.pop(THOUGHT, None)
    if thought is not None and not isinstance(thought, str):
        raise _forms_error(raw)
    thought = thought.strip() or None if thought is not None else None
    # The decision fields say which branch follows; the branch itself is what counts.
    data.pop(NEEDS_TOOL, None)
    data.pop(CALLS_NOW, None)
    if set(data) == {ANSWER} and isinstance(data[ANSWER], str):
        return GuidedReply(thought, data[ANSWER])
    if set(data) == {"name", "arguments"}:
        calls: Any = [data]
    elif set(data) == {CALLS}:
        calls = data[CALLS]
    else:
        calls = None
    if not isinstance(calls, list) or not calls:
        raise _forms_error(raw)
    out = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise GuidedReplyError(f"guided tool_calls[{i}] has no name: {raw[:200]!r}", text=raw)
        arguments = call.get("arguments", {})
        out.append((f"call_{turn}_{i}", call["name"], json.dumps(arguments, ensure_ascii=False)))
    return GuidedReply(thought, None, out)
