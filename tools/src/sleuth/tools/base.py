"""The tool interface shared by in-process tools and remote tool services.

A tool is described to the model by a :class:`ToolSpec` (name, description, JSON Schema of its
arguments) and executed with :meth:`Tool.call`. The agent loop owns timeouts, retries and caching;
a tool only does its one job and raises :class:`ToolError` when it cannot.

Errors::

    ToolError                 the call failed; the message goes back to the model as an observation
    ├── ToolUnavailable       retryable: the backend is down or timed out
    │   └── ToolBusy          retryable: every connection / execution slot is taken (load shed)
    ├── ToolMisconfigured     permanent: the tool's own configuration or credentials are wrong;
    │                         the model is told the tool is unavailable, an operator must act
    └── ToolArgumentError     permanent: the arguments are wrong (the message names the field)

Messages are what the model (and, through traces, a client) reads: they never carry internal
addresses, file paths or credentials; the detail goes to the tool service's log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sleuth.core.errors import SleuthError
from sleuth.core.tools import ToolSpec


class ToolError(SleuthError):
    """A tool call failed. ``retryable`` tells the loop whether one retry may help."""

    retryable: bool = False

    def __init__(self, message: str, *, tool: str = "") -> None:
        super().__init__(message)
        self.tool = tool


class ToolUnavailable(ToolError):
    """The tool's backend is down, overloaded or timed out."""

    retryable = True


class ToolBusy(ToolUnavailable):
    """The tool is at capacity (its connection pool or its execution limit); retry shortly."""


class ToolMisconfigured(ToolError):
    """The tool cannot work as configured (a wrong password, a DSN that does not parse, a role
    without the grants it needs): not the model's fault, and retrying will not help."""


class ToolArgumentError(ToolError):
    """The model's arguments are invalid; retrying the same call will not help."""


@dataclass(frozen=True)
class Citation:
    """Where a piece of evidence came from, so an answer can cite it."""

    id: str
    source: str
    text: str = ""


@dataclass(frozen=True)
class ToolOutput:
    """A successful tool result: JSON-serialisable content plus the citations it carries."""

    content: Any
    citations: tuple[Citation, ...] = field(default_factory=tuple)


@runtime_checkable
class Tool(Protocol):
    """Anything the agent can call: ``spec`` for the model, ``call`` to execute."""

    @property
    def spec(self) -> ToolSpec: ...

    async def call(self, arguments: dict[str, Any]) -> ToolOutput: ...
