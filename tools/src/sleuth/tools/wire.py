"""The JSON form of tool results and tool errors, shared by the tool service and remote tools.

A result::

    {"content": <any JSON>, "citations": [{"id": "...", "source": "...", "text": "..."}]}

An error (the shape of every sleuth HTTP error, :mod:`sleuth.core.http.error_shapes`, plus ``kind``
and ``tool``)::

    {"error": {"message": "...", "type": KIND, "field": null, "kind": KIND, "tool": "..."}}

``kind`` is ``argument``, ``unavailable``, ``busy``, ``misconfigured`` or ``error`` and maps back
to :class:`ToolArgumentError`, :class:`ToolUnavailable`, :class:`ToolBusy`,
:class:`ToolMisconfigured` and :class:`ToolError`, so a remote tool fails exactly like the
in-process one would.
"""

from __future__ import annotations

import json
from typing import Any

from sleuth.tools.base import (
    Citation,
    ToolArgumentError,
    ToolBusy,
    ToolError,
    ToolMisconfigured,
    ToolOutput,
    ToolUnavailable,
)

KINDS: dict[str, type[ToolError]] = {
    "argument": ToolArgumentError,
    "busy": ToolBusy,
    "unavailable": ToolUnavailable,
    "misconfigured": ToolMisconfigured,
}


def canonical_arguments(arguments: dict[str, Any]) -> str:
    """The JSON text of a call's arguments with sorted keys and no insignificant whitespace: the
    key under which identical calls share a cache entry (the agent) or an execution (both)."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def output_to_json(output: ToolOutput) -> dict[str, Any]:
    return {
        "content": output.content,
        "citations": [{"id": c.id, "source": c.source, "text": c.text} for c in output.citations],
    }


def output_from_json(data: dict[str, Any]) -> ToolOutput:
    citations = tuple(
        Citation(id=str(c["id"]), source=str(c.get("source", "")), text=str(c.get("text", "")))
        for c in data.get("citations", [])
    )
    return ToolOutput(content=data.get("content"), citations=citations)


def error_kind(err: ToolError) -> str:
    for kind, cls in KINDS.items():  # most specific first: busy before unavailable
        if isinstance(err, cls):
            return kind
    return "error"


def error_json(kind: str, message: str, tool: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "field": None, "kind": kind, "tool": tool}}


def error_to_json(err: ToolError, tool: str) -> dict[str, Any]:
    return error_json(error_kind(err), str(err), err.tool or tool)


def error_from_json(data: dict[str, Any], tool: str) -> ToolError:
    body = data.get("error") or {}
    kind = body.get("kind", "error")
    message = str(body.get("message", "tool error"))
    cls = KINDS.get(kind, ToolError)
    return cls(message, tool=str(body.get("tool") or tool))
