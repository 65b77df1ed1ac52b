"""``sleuth agent``: serve the agent's HTTP API (settings from the environment, see settings.py;
traces from the standard ``OTEL_*`` variables, see :mod:`sleuth.core.tracing`; service name
``sleuth-agent-<name>`` unless ``OTEL_SERVICE_NAME`` says otherwise)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from sleuth.agent.api import create_app
from sleuth.agent.settings import AgentSettings
from sleuth.core.errors import ConfigError
from sleuth.core.http.request_guard import HttpLimits
from sleuth.core.http.server import serve
from sleuth.core.tracing import TracingSettings


def run(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in {"config": args.config, "port": args.port}.items() if v}
    settings = AgentSettings(**overrides)
    config = settings.load_config()
    try:
        tracing = TracingSettings.from_env(os.environ, f"sleuth-agent-{settings.name}")
        host = settings.listen_host(config)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    log_requests()
    if config.access is None:
        logging.getLogger("sleuth.agent").warning(
            "no access configured: listening on %s only, every local client is the caller "
            "'local' (configure access to serve other hosts)",
            host,
        )
    app = create_app(config, name=settings.name, tracing=tracing)
    serve(app, host, settings.port, HttpLimits.of(config.limits))
    return 0


def log_requests() -> None:
    """The agent's own lines (one per request, warnings) on stderr, beside uvicorn's."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("sleuth")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agent", help="serve the agent (ReAct loop behind an HTTP API)", description=__doc__
    )
    parser.add_argument("--config", help="configuration file (default $SLEUTH_AGENT_CONFIG)")
    parser.add_argument("--port", type=int, help="port (default $SLEUTH_AGENT_PORT or 8080)")
    parser.set_defaults(func=run)
