"""Errors of the agent service (tool errors live in :mod:`sleuth.agent.tools.base`).

::

    AgentError                  base of everything the agent raises
    ├── ModelError              the model server call failed
    │   ├── ModelUnavailable    retryable: connection refused, timeout, 429 or 5xx
    │   └── ModelResponseError  permanent: 4xx or a body that is not the OpenAI format
    └── ToolConfigError         a configured tool cannot be built (names the tool)
"""

from __future__ import annotations


class AgentError(Exception):
    """Base of the agent's errors."""

    retryable: bool = False


class ModelError(AgentError):
    """A call to the model server failed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelUnavailable(ModelError):
    """The model server is down, overloaded or too slow; trying again later may work."""

    retryable = True


class ModelResponseError(ModelError):
    """The model server rejected the request or answered something unparseable."""


class ToolConfigError(AgentError):
    """A tool in the configuration cannot be built."""

    def __init__(self, message: str, *, tool: str) -> None:
        super().__init__(f"tools[{tool}]: {message}")
        self.tool = tool
