"""``sleuth tool-service --config FILE [--host H] [--port P]``: serve one configured tool.

The config file is the ToolBinding's spec (see :mod:`sleuth.agent.toolservice.build`; the tools
are built by :mod:`sleuth.agent.tools.build`); its path may also come from
``SLEUTH_TOOL_CONFIG``. Credentials come from the environment only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


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
    import uvicorn

    from sleuth.agent.tools.build import ServiceConfigError, ServiceTools, build_service_tools
    from sleuth.agent.toolservice.app import create_app
    from sleuth.agent.toolservice.build import load_spec

    if args.config is None:
        print("error: --config (or SLEUTH_TOOL_CONFIG) is required", file=sys.stderr)
        return 2
    try:
        spec = load_spec(args.config)
    except ServiceConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2

    async def load() -> ServiceTools:
        return await build_service_tools(spec, dict(os.environ))

    try:
        uvicorn.run(create_app(load), host=args.host, port=args.port, log_level="warning")
    except ServiceConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0
