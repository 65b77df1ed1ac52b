"""``sleuth scripted-model``: serve a scenario file over HTTP.

Also runnable as ``python -m sleuth.scripted``.
"""

from __future__ import annotations

import argparse
from typing import Any

from sleuth.scripted.scenario import Scenario, load_scenario, seed_latency_profile


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", help="JSON or YAML scenario file (default: empty script)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    parser.add_argument(
        "--seed-latency",
        action="store_true",
        help="override the scenario's latency with the seed article's profile",
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from sleuth.scripted.app import ScriptState, create_app

    scenario = load_scenario(args.scenario) if args.scenario else Scenario()
    if args.seed_latency:
        scenario = scenario.model_copy(update={"latency": seed_latency_profile()})
    app = create_app(ScriptState(scenario))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "scripted-model",
        help="serve a scripted OpenAI-compatible model (tests and benchmarks; not a model)",
        description=__doc__,
    )
    add_arguments(parser)
    parser.set_defaults(func=run)
