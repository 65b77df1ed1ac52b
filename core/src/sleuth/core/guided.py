"""Guided tool calling: the tool-call format forced by a JSON Schema instead of a native parser.

A model server without a tool-call parser for its model (llama.cpp's servers with Qwen2.5, vLLM
without ``--tool-call-parser``) still constrains output to a JSON Schema (structured output).
In guided mode the model client sends ``tools`` as usual, so the model's own chat template shows
them the way the model was trained, plus the schema of :func:`reply_schema`; the reply is one JSON
object in one of three forms::

    {"name": "sql_query", "arguments": {"query": "SELECT ..."}}           one call
    {"tool_calls": [{"name": ..., "arguments": {...}}, ...]}                independent calls
    {"answer": "the final answer"}

The schema has one branch per bound tool (``name`` a constant, ``arguments`` that tool's own
argument schema) — the shape Hermes-style models write on their own —, a list of 2 to
``max_calls`` such calls (parallel calls; left out when ``max_calls`` is 1), and the answer
branch. :func:`parse_reply` turns the reply into the same :class:`~sleuth.core.llm.ModelTurn` the
native path produces (tool calls with ids ``call_<turn>_<index>``), so the loop, the trace and
the evals do not change; the conversation keeps its native shape (assistant ``tool_calls``,
``tool`` messages), which tool-aware chat templates render.

Two wire forms carry the schema (:data:`GuidedFormat`): ``json_schema`` is OpenAI's
``response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`` (vLLM, llama.cpp's
``llama-server``); ``json_object`` is ``response_format: {"type": "json_object", "schema": ...}``
(llama-cpp-python's server, which refuses the first form, and ``llama-server``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from sleuth.core.errors import ModelResponseError

ToolCalling = Literal["native", "guided"]
GuidedFormat = Literal["json_schema", "json_object"]
SCHEMA_NAME = "sleuth_turn"
DEFAULT_MAX_CALLS = 4
"""Calls one guided reply may hold (parallel calls); 1 when the agent runs calls one by one."""


class GuidedReplyError(ModelResponseError):
    """A guided reply that is not the JSON the schema asks for (cut by max_tokens, or a server
    that ignored the schema); ``text`` is what the model wrote."""

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


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


def reply_schema(tools: list[dict[str, Any]], max_calls: int = DEFAULT_MAX_CALLS) -> dict[str, Any]:
    """The JSON Schema of one guided reply for the OpenAI ``tools`` list (see the module doc)."""
    if max_calls < 1:
        raise ValueError(f"max_calls must be at least 1, got {max_calls}")
    answer = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    calls = [_call_schema(tool) for tool in tools]
    branches: list[dict[str, Any]] = list(calls)
    if calls and max_calls > 1:
        branches.append(
            {
                "type": "object",
                "properties": {
                    "tool_calls": {
                        "type": "array",
                        "items": calls[0] if len(calls) == 1 else {"anyOf": calls},
                        "minItems": 2,
                        "maxItems": max_calls,
                    }
                },
                "required": ["tool_calls"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": [*branches, answer]} if branches else answer


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


def is_reply_schema(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` is one :func:`reply_schema` wrote (an answer branch is always there)."""
    branches = schema.get("anyOf", [schema])
    return any(isinstance(b, dict) and set(b.get("properties", {})) == {"answer"} for b in branches)


def schema_tool_names(schema: dict[str, Any]) -> list[str]:
    """Tool names a :func:`reply_schema` offers, in order."""
    names: list[str] = []
    for branch in schema.get("anyOf", [schema]):
        const = branch.get("properties", {}).get("name", {}).get("const")
        if isinstance(const, str) and const not in names:
            names.append(const)
    return names


def encode_calls(calls: list[tuple[str, Any]]) -> str:
    """The guided JSON of tool calls ``(name, arguments)``: one call alone, several in
    ``tool_calls``. Arguments that are not a JSON object (text a model wrote) are kept as text."""
    out = []
    for name, arguments in calls:
        if isinstance(arguments, str):
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                parsed = arguments
            arguments = parsed
        out.append({"name": name, "arguments": arguments})
    return json.dumps(out[0] if len(out) == 1 else {"tool_calls": out}, ensure_ascii=False)


def encode_answer(text: str) -> str:
    return json.dumps({"answer": text}, ensure_ascii=False)


def turn_index(messages: list[dict[str, Any]]) -> int:
    """Assistant turns already in the conversation: the ``<turn>`` of guided call ids."""
    return sum(1 for m in messages if m.get("role") == "assistant")


def parse_reply(text: str | None, turn: int) -> tuple[str | None, list[tuple[str, str, str]]]:
    """``(answer, calls)`` from a guided reply; calls are ``(id, name, arguments_text)``.

    Raises :class:`GuidedReplyError` when the text is not one of the three forms. A call of a tool
    that was not offered is kept (the loop tells the model it is unknown), as on the native path.
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
    if set(data) == {"answer"} and isinstance(data["answer"], str):
        return data["answer"], []
    if set(data) == {"name", "arguments"}:
        calls: Any = [data]
    elif set(data) == {"tool_calls"}:
        calls = data["tool_calls"]
    else:
        calls = None
    if not isinstance(calls, list) or not calls:
        raise GuidedReplyError(
            'guided reply is none of {"answer": text}, {"name": tool, "arguments": {...}} and '
            f'{{"tool_calls": [...]}}: {raw[:200]!r}',
            text=raw,
        )
    out = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise GuidedReplyError(f"guided tool_calls[{i}] has no name: {raw[:200]!r}", text=raw)
        arguments = call.get("arguments", {})
        out.append((f"call_{turn}_{i}", call["name"], json.dumps(arguments, ensure_ascii=False)))
    return None, out
