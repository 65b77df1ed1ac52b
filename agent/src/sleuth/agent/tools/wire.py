"""The JSON form of tool results and tool errors, shared by the tool service and remote tools.

A result::

    {"content": <any JSON>, "citations": [{"id": "...", "source": "...", "text": "..."}]}

An error::

    {"error": {"kind": "argument" | "unavailable" | "error", "message": "...", "tool": "..."}}

``kind`` maps back to :class:`ToolArgumentError`, :class:`ToolUnavailable` and :class:`ToolError`,
so a remote tool fails exactly like the in-process one would.
"""

from __future__ import annotations

from typing import Any

from sleuth.agent.tools.base import (
    Citation,
    ToolArgumentError,
    ToolError,
    ToolOutput,
    ToolUnavailable,
)


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
    if isinstance(err, ToolArgumentError):
        return "argument"
    if isinstance(err, ToolUnavailable):
        return "unavailable"
    return "error"


def error_to_json(err: ToolError, tool: str) -> dict[str, Any]:
    return {"error": {"kind": error_kind(err), "message": str(err), "tool": err.tool or tool}}


def error_from_json(data: dict[str, Any], tool: str) -> ToolError:
    body = data.get("error") or {}
    kind = body.get("kind", "error")
    message = str(body.get("message", "tool error"))
    cls: type[ToolError] = {"argument": ToolArgumentError, "unavailable": ToolUnavailable}.get(
        kind, ToolError
    )
    return cls(message, tool=str(body.get("tool") or tool))
