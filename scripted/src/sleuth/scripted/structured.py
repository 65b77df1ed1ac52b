"""Structured output: what the scripted server does with a request that carries a JSON Schema.

A real server constrained by a schema (vLLM's structured outputs, llama.cpp's grammars) can only
write text the schema accepts. The scripted server keeps that promise, and so catches a wrong
schema in tests instead of hiding it:

1. the schema (``response_format`` ``json_schema`` or ``json_object`` + ``schema``, as
   :func:`sleuth.core.guided.schema_of_request` reads them) must be a valid JSON Schema;
2. a scripted turn for a guided request (a schema of :func:`sleuth.core.guided.reply_schema`) is
   written in the guided form: its ``thought`` first, then tool calls as ``"tool_calls": [...]``
   or text as ``"answer": ...`` — unless the turn is ``raw``, which sends its content verbatim
   (how a test scripts a reply a server cut short);
3. the text sent must validate against the schema. Otherwise the server answers 400 naming the
   schema's complaint, as no constrained server could have produced that text.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from sleuth.core import guided
from sleuth.scripted.scenario import ScriptedResponse


class SchemaRefusal(Exception):
    """The request's schema is invalid, or refuses the scripted reply; the message says why."""


def _check_schema(schema: dict[str, Any]) -> None:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        raise SchemaRefusal(
            f"response_format: not a valid JSON Schema at {where}: {exc.message}"
        ) from None


def _text(response: ScriptedResponse, schema: dict[str, Any]) -> str:
    if response.raw or not guided.is_reply_schema(schema):
        return response.content or ""
    thought = response.thought or ""
    if response.tool_calls:
        return guided.encode_calls([(c.name, c.arguments) for c in response.tool_calls], thought)
    return guided.encode_answer(response.content or "", thought)


def _validate(text: str, schema: dict[str, Any]) -> None:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise SchemaRefusal(
            f"the scripted reply is not JSON, which the request's schema forbids: {exc}"
        ) from None
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.path)
    )
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        where = "/".join(str(p) for p in best.absolute_path) or "(root)"
        raise SchemaRefusal(
            f"the request's schema refuses the scripted reply at {where}: {best.message} "
            f"(reply: {text[:300]})"
        )


def structured(body: dict[str, Any], response: ScriptedResponse) -> ScriptedResponse:
    """``response`` as a server bound to ``body``'s schema sends it (unchanged without one).

    Raises :class:`SchemaRefusal` (see the module docstring).
    """
    schema = guided.schema_of_request(body)
    if schema is None:
        return response
    _check_schema(schema)
    text = _text(response, schema)
    if not response.raw:
        _validate(text, schema)
    return response.model_copy(
        update={"content": text, "tool_calls": [], "finish_reason": response.finish_reason}
    )
