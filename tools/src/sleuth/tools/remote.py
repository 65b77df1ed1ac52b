"""A tool served by a tool service, called through the same :class:`Tool` interface.

:class:`RemoteTool` speaks MCP streamable HTTP (``{endpoint}/mcp``) by default, or the plain JSON
endpoint (``{endpoint}/v1/tools/{name}/call``). Errors come back with their kind (argument,
unavailable, other), so the agent loop treats a remote failure exactly like a local one; a
service that cannot be reached is :class:`ToolUnavailable`. The agent holds no credentials: they
live in the tool service. Every request carries the active span's ``traceparent`` (the
``execute_tool`` span, with tracing on), so the tool service's span joins the agent's trace.

``build_remote_tool(tool_config)`` is what the agent (:mod:`sleuth.agent.toolset`) calls for a tool
with an ``endpoint``. It asks the service for the tool's spec (so named SQL templates get their own
schemas) and falls back to the default spec of the tool's type when the service is not up yet.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx

from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.tools import DEFAULT_SPECS, ToolSpec, with_description
from sleuth.core.tracing import inject_headers
from sleuth.tools.base import ToolError, ToolOutput, ToolUnavailable
from sleuth.tools.wire import error_from_json, output_from_json

log = logging.getLogger("sleuth.tools.remote")

Transport = Literal["mcp", "json"]


def fetch_specs(endpoint: str, timeout_seconds: float = 3.0) -> dict[str, ToolSpec]:
    """The specs a tool service serves (``GET /v1/tools``), by name."""
    response = httpx.get(f"{endpoint.rstrip('/')}/v1/tools", timeout=timeout_seconds)
    response.raise_for_status()
    return {spec.name: spec for spec in map(ToolSpec.from_openai, response.json()["tools"])}


class RemoteTool:
    """One function of a tool service."""

    def __init__(
        self,
        endpoint: str,
        spec: ToolSpec,
        *,
        transport: Transport = "mcp",
        timeout_seconds: float = 30.0,
    ) -> None:
        self._endpoint = endpoint.rstrip("/")
        self._spec = spec
        self._transport = transport
        self._timeout = timeout_seconds

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def endpoint(self) -> str:
        return self._endpoint

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        try:
            async with asyncio.timeout(self._timeout):
                if self._transport == "json":
                    result = await self._call_json(arguments)
                else:
                    result = await self._call_mcp(arguments)
        except ToolError:
            raise
        except TimeoutError:
            raise ToolUnavailable(
                f"tool service timed out after {self._timeout:g} s", tool=self._spec.name
            ) from None
        except Exception as err:  # transport failures (connection refused, HTTP errors, ...)
            log.warning("%s: tool service %s unreachable: %r", self._spec.name, self._endpoint, err)
            raise ToolUnavailable(
                f"tool service unreachable ({_describe(err)})", tool=self._spec.name
            ) from None
        if "error" in result:
            raise error_from_json(result, self._spec.name)
        return output_from_json(result)

    async def _call_json(self, arguments: dict[str, Any]) -> dict[str, Any]:
        url = f"{self._endpoint}/v1/tools/{self._spec.name}/call"
        async with httpx.AsyncClient(timeout=self._timeout) as client:
            response = await client.post(
                url, json={"arguments": arguments}, headers=inject_headers({})
            )
        if response.status_code not in (200, 422, 500, 503):
            raise ToolUnavailable(
                f"tool service answered HTTP {response.status_code}", tool=self._spec.name
            )
        data: dict[str, Any] = response.json()
        return data

    @asynccontextmanager
    async def _mcp_session(self) -> AsyncIterator[Any]:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        url = f"{self._endpoint}/mcp"
        async with (
            httpx.AsyncClient(timeout=self._timeout, headers=inject_headers({})) as http,
            streamable_http_client(url, http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    async def _call_mcp(self, arguments: dict[str, Any]) -> dict[str, Any]:
        async with self._mcp_session() as session:
            result = await session.call_tool(self._spec.name, arguments)
        text = "".join(block.text for block in result.content if block.type == "text")
        data: dict[str, Any] = json.loads(text) if text else {}
        if result.isError and "error" not in data:
            data = {"error": {"kind": "error", "message": text or "tool error"}}
        return data

    async def list_remote_specs(self) -> list[ToolSpec]:
        """The specs the service announces over MCP (``tools/list``)."""
        async with self._mcp_session() as session:
            listed = await session.list_tools()
        return [
            ToolSpec(name=t.name, description=t.description or "", parameters=t.inputSchema)
            for t in listed.tools
        ]


def _describe(err: BaseException) -> str:
    """The failure's kind, never its text (which holds addresses)."""
    if isinstance(err, BaseExceptionGroup) and err.exceptions:
        return _describe(err.exceptions[0])
    return type(err).__name__


def build_remote_tool(config: ToolConfig) -> RemoteTool:
    """The agent's builder (:mod:`sleuth.agent.toolset`) for a tool with an ``endpoint``."""
    assert config.endpoint is not None
    endpoint = str(config.endpoint).rstrip("/")
    spec: ToolSpec | None = None
    try:
        spec = fetch_specs(endpoint).get(config.name)
    except (httpx.HTTPError, KeyError, ValueError):
        spec = None
    if spec is None:
        default = DEFAULT_SPECS.get(config.type)
        if default is None:
            raise ToolUnavailable(
                f"tool service {endpoint} is unreachable and {config.type!r} has no default spec",
                tool=config.name,
            )
        spec = ToolSpec(
            name=config.name, description=default.description, parameters=default.parameters
        )
    spec = with_description(spec, config.description)
    return RemoteTool(endpoint, spec, timeout_seconds=config.timeout_seconds)
