"""The agent's tool set: every configured tool made, then bound to its timeout and cache TTL.

Resolution of one :class:`~sleuth.core.api.agent_config.ToolConfig`:

- ``factory: "pkg.mod:callable"`` → ``callable(tool_config)`` returns a :class:`Tool` (a
  user-supplied factory: the only import string left);
- ``endpoint`` set → :func:`sleuth.tools.remote.build_remote_tool` (a tool service over MCP);
- neither → :func:`sleuth.tools.local.build_local_tool` (the built-in implementation of the
  tool's type, in this process).

The tools themselves are built in one place, :mod:`sleuth.tools.build`. When a factory cannot be
imported the error names the tool. A ``description`` in the configuration overrides the tool's
own.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sleuth.agent.errors import ToolConfigError
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig, ToolConfig
from sleuth.core.tools import ToolSpec
from sleuth.tools.base import Tool, ToolOutput
from sleuth.tools.local import build_local_tool
from sleuth.tools.remote import build_remote_tool

Builder = Callable[[ToolConfig], Tool]


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


def _import_factory(path: str, tool: str) -> Builder:
    """A user-supplied factory, ``pkg.mod:callable``."""
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
        builder: Builder = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise ToolConfigError(f"cannot import {path}: {exc}", tool=tool) from exc
    return builder


def _builder(config: ToolConfig) -> tuple[Builder, str]:
    """The builder of one configured tool and its name for error messages."""
    if config.factory:
        return _import_factory(config.factory, config.name), config.factory
    if config.endpoint is not None:
        return build_remote_tool, "sleuth.tools.remote:build_remote_tool"
    return build_local_tool, "sleuth.tools.local:build_local_tool"


def tool_for(config: ToolConfig) -> Tool:
    """The tool ``config`` describes, checked: a :class:`Tool` that calls itself by that name."""
    builder, where = _builder(config)
    tool = builder(config)
    if not isinstance(tool, Tool):
        raise ToolConfigError(
            f"{where} returned {type(tool).__name__}, not a Tool", tool=config.name
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
            tool_for(tool_config),
            timeout_s=tool_config.timeout_seconds,
            cache_ttl_s=config.tool_cache_ttl_seconds if ttl is None else ttl,
        )
    return bound
