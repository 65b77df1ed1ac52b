"""Building the configured tools: in-process from a factory, or remote through a tool service.

Resolution of one :class:`~sleuth.core.api.agent_config.ToolConfig`:

- ``factory: "pkg.mod:callable"`` → ``callable(tool_config)`` returns a :class:`Tool`;
- ``endpoint`` set → ``sleuth.agent.tools.remote:build_remote_tool(tool_config)``;
- neither → ``sleuth.agent.tools.local:build_local_tool(tool_config)`` (the built-in
  implementation of the tool's type).

The two default builders belong to the tools package; when one is missing the error names the
tool. A ``description`` in the configuration overrides the tool's own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sleuth.agent.errors import ToolConfigError
from sleuth.agent.toolrun import BoundTool
from sleuth.agent.tools.base import Tool, ToolOutput
from sleuth.core.api.agent_config import AgentConfig, ToolConfig
from sleuth.core.tools import ToolSpec

REMOTE_BUILDER = "sleuth.agent.tools.remote:build_remote_tool"
LOCAL_BUILDER = "sleuth.agent.tools.local:build_local_tool"


@dataclass(frozen=True)
class DescribedTool:
    """A tool whose description the configuration overrides."""

    inner: Tool
    description: str

    @property
    def spec(self) -> ToolSpec:
        return replace(self.inner.spec, description=self.description)

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        return await self.inner.call(arguments)


def _import(path: str, tool: str) -> Callable[[ToolConfig], Tool]:
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        builder: Callable[[ToolConfig], Tool] = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ToolConfigError(f"cannot import {path}: {exc}", tool=tool) from exc
    return builder


def build_tool(config: ToolConfig) -> Tool:
    if config.factory:
        path = config.factory
    elif config.endpoint is not None:
        path = REMOTE_BUILDER
    else:
        path = LOCAL_BUILDER
    tool = _import(path, config.name)(config)
    if not isinstance(tool, Tool):
        raise ToolConfigError(
            f"{path} returned {type(tool).__name__}, not a Tool", tool=config.name
        )
    if tool.spec.name != config.name:
        raise ToolConfigError(
            f"the tool calls itself {tool.spec.name!r}, the configuration {config.name!r}",
            tool=config.name,
        )
    if config.description:
        tool = DescribedTool(tool, config.description)
    return tool


def bind_tools(config: AgentConfig) -> dict[str, BoundTool]:
    """Every configured tool, built and bound to its timeout and cache TTL."""
    bound: dict[str, BoundTool] = {}
    for tool_config in config.tools:
        ttl = tool_config.cache_ttl_seconds
        bound[tool_config.name] = BoundTool(
            build_tool(tool_config),
            timeout_s=tool_config.timeout_seconds,
            cache_ttl_s=config.tool_cache_ttl_seconds if ttl is None else ttl,
        )
    return bound
