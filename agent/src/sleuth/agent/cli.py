"""``sleuth agent``: serve the agent's HTTP API (settings from the environment, see settings.py)."""

from __future__ import annotations

import argparse
from typing import Any


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from sleuth.agent.api import create_app
    from sleuth.agent.settings import AgentSettings

    overrides = {k: v for k, v in {"config": args.config, "port": args.port}.items() if v}
    settings = AgentSettings(**overrides)
    app = create_app(settings.load_config(), name=settings.name)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info", access_log=False)
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agent", help="serve the agent (ReAct loop behind an HTTP API)", description=__doc__
    )
    parser.add_argument("--config", help="configuration file (default $SLEUTH_AGENT_CONFIG)")
    parser.add_argument("--port", type=int, help="port (default $SLEUTH_AGENT_PORT or 8080)")
    parser.set_defaults(func=run)
