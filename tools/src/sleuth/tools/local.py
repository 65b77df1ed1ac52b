"""In-process tools for one machine: what the agent runs when a tool has no endpoint.

The settings come from the environment of the agent process (on one machine the agent is also
where the credentials live; in a cluster use a tool service instead):

==========================================  =================================================
``SLEUTH_SQL_CONNECTION_URI``               sql_query: DSN of the SELECT-only role
``SLEUTH_SQL_ALLOWED_TABLES``               sql_query: comma-separated allowlist (required)
``SLEUTH_QDRANT_PATH`` / ``SLEUTH_QDRANT_URL``  vector_search: local-mode folder or URL
``SLEUTH_QDRANT_COLLECTION``                vector_search: collection (default ``documents``)
``SLEUTH_WEB_SEARCH_URL``                   web_search: SearxNG base URL
``SLEUTH_WEB_SEARCH_ALLOW_EXTERNAL=true``   web_search: the explicit opt-in
==========================================  =================================================

The tool is connected on its first call (pools and clients need a running event loop), through
the same builders as the tool service. A configuration that cannot be used is a
:class:`~sleuth.tools.base.ToolMisconfigured` whose message — which the model, the trace and so
the client read — names the setting and the problem, never the path or address: those go to the
agent's log.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.tools import DEFAULT_SPECS, ToolSpec, sql_description_for
from sleuth.tools.base import Tool, ToolMisconfigured, ToolOutput
from sleuth.tools.build import ServiceConfigError, build_service_tools

log = logging.getLogger("sleuth.tools")

_REF = {"name": "environment", "key": "value"}


def binding_from_env(config: ToolConfig, env: Mapping[str, str]) -> ToolBindingSpec:
    """The ToolBinding spec an in-process tool would have, read from ``env``."""
    base: dict[str, Any] = {"agentRef": {"name": "local"}, "type": config.type}
    base["name"] = config.name
    if config.type == "sql_query":
        tables = [
            t.strip() for t in env.get("SLEUTH_SQL_ALLOWED_TABLES", "").split(",") if t.strip()
        ]
        base["sqlQuery"] = {"connectionSecretRef": _REF, "allowedTables": tables}
    elif config.type == "vector_search":
        base["vectorSearch"] = {
            "url": env.get("SLEUTH_QDRANT_URL") or "http://local-mode.invalid",
            "collection": env.get("SLEUTH_QDRANT_COLLECTION", "documents"),
        }
    elif config.type == "web_search":
        base["webSearch"] = {
            "url": env.get("SLEUTH_WEB_SEARCH_URL", ""),
            "allowExternal": env.get("SLEUTH_WEB_SEARCH_ALLOW_EXTERNAL", "").lower() == "true",
        }
    if config.description:
        base["description"] = config.description
    return ToolBindingSpec.model_validate(base)


class LocalTool:
    """A built-in tool connected lazily, on its first call."""

    def __init__(self, config: ToolConfig, env: Mapping[str, str]) -> None:
        self._binding = binding_from_env(config, env)
        self._env = dict(env)
        default = DEFAULT_SPECS[config.type]
        description = default.description
        if self._binding.sql_query is not None:
            description = sql_description_for(list(self._binding.sql_query.allowed_tables))
        self._spec = ToolSpec(
            name=config.name,
            description=config.description or description,
            parameters=default.parameters,
        )
        self._inner: Tool | None = None
        self._lock = asyncio.Lock()

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def _tool(self) -> Tool:
        async with self._lock:
            if self._inner is None:
                try:
                    built = await build_service_tools(self._binding, self._env)
                except ServiceConfigError as err:  # the whole story (paths too): the log only
                    log.error("%s cannot be built: %s", self._spec.name, err)
                    said = err.public or "its configuration cannot be used"
                    raise ToolMisconfigured(
                        f"the {self._spec.name} tool is unavailable: {said}; an operator must "
                        "fix it (the agent's log says why)",
                        tool=self._spec.name,
                    ) from None
                self._inner = built.tools[self._spec.name]
            return self._inner

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        return await (await self._tool()).call(arguments)


def build_local_tool(config: ToolConfig) -> LocalTool:
    """The agent's builder (:mod:`sleuth.agent.toolset`) for a tool without an endpoint."""
    if config.type not in DEFAULT_SPECS:
        raise ValueError(f"no built-in implementation of tool type {config.type!r}")
    return LocalTool(config, os.environ)
