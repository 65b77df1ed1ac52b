"""Errors of the agent service, under :class:`sleuth.core.errors.SleuthError`.

Model-server errors are shared with the evals and live in :mod:`sleuth.core.errors`; tool errors
in :mod:`sleuth.tools.base`.

::

    AgentError                  base of what the agent itself raises
    ├── ToolConfigError         a configured tool cannot be built (names the tool)
    └── RequestRejected         a client's request is refused (HTTP status, field, error type)
"""

from __future__ import annotations

from sleuth.core.errors import SleuthError


class AgentError(SleuthError):
    """Base of the agent's errors."""


class ToolConfigError(AgentError):
    """A tool in the configuration cannot be built."""

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(f"tools[{tool}]: {message}")
        self.tool = tool


class RequestRejected(AgentError):
    """A request the API refuses: ``status`` (4xx), ``field`` at fault (or None), ``kind`` (the
    error's ``type``)."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 422,
        field: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.field = field
        self.kind = kind
