"""``sleuth tool-service --config FILE [--host H] [--port P]``: serve one configured tool.

The config file is the ToolBinding's spec (see :mod:`sleuth.tools.service.config`; the tools
are built by :mod:`sleuth.tools.build`); its path may also come from
``SLEUTH_TOOL_CONFIG``. Credentials come from the environment only. Traces: the standard
``OTEL_*`` variables (:mod:`sleuth.core.tracing`); the service name is ``OTEL_SERVICE_NAME``
(the operator sets ``sleuth-tool-<binding name>``), else ``sleuth-tool-<tool name>``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import uvicorn
import uvloop

from sleuth.core.errors import ConfigError
from sleuth.core.http.request_guard import HttpLimits
from sleuth.core.http.server import server_config
from sleuth.core.tracing import TracingSettings
from sleuth.tools.build import ServiceConfigError, ServiceTools, build_service_tools
from sleuth.tools.service.app import create_app
from sleuth.tools.service.config import load_spec


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "tool-service",
        help="serve one tool over MCP streamable HTTP and plain JSON",
        description="Serve the tool of one ToolBinding: MCP at /mcp, JSON at /v1/tools, "
        "/healthz, /readyz, /metrics.",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=os.environ.get("SLEUTH_TOOL_CONFIG"),
        help="ToolBinding spec file (YAML/JSON); default $SLEUTH_TOOL_CONFIG",
    )
    parser.add_argument("--host", default="0.0.0.0", help="listen address (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=8080, help="listen port (default 8080)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.config is None:
        print("error: --config (or SLEUTH_TOOL_CONFIG) is required", file=sys.stderr)
        return 2
    try:
        spec = load_spec(args.config)
    except ServiceConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        tracing = TracingSettings.from_env(os.environ, f"sleuth-tool-{spec.tool_name}")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    async def main() -> int:
        # The tools are built before the server starts, so that a configuration that cannot work
        # (a DSN that does not parse, a Qdrant path that is no store, a template the SQL guard
        # refuses) stops the service with one line naming the setting, not a traceback.
        try:
            tools = await build_service_tools(spec, dict(os.environ))
        except ConfigError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2

        async def load() -> ServiceTools:
            return tools

        app = create_app(
            load,
            limits=HttpLimits.of(spec.limits),
            max_concurrent_calls=spec.max_concurrent_calls,
            tracing=tracing,
        )
        config = server_config(
            app, args.host, args.port, HttpLimits.of(spec.limits), log_level="warning"
        )
        await uvicorn.Server(config).serve()
        return 0

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main())
