"""``sleuth agent``: serve the agent's HTTP API (settings from the environment, see settings.py)."""

from __future__ import annotations

import argparse
from typing import Any


def run(args: argparse.Namespace) -> int:
    from sleuth.agent.api import create_app
    from sleuth.agent.httpguard import HttpLimits
    from sleuth.agent.httpserver import serve
    from sleuth.agent.settings import AgentSettings

    overrides = {k: v for k, v in {"config": args.config, "port": args.port}.items() if v}
    settings = AgentSettings(**overrides)
    config = settings.load_config()
    app = create_app(config, name=settings.name)
    serve(app, settings.host, settings.port, HttpLimits.of(config.limits))
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agent", help="serve the agent (ReAct loop behind an HTTP API)", description=__doc__
    )
    parser.add_argument("--config", help="configuration file (default $SLEUTH_AGENT_CONFIG)")
    parser.add_argument("--port", type=int, help="port (default $SLEUTH_AGENT_PORT or 8080)")
    parser.set_defaults(func=run)
