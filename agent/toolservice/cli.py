"""``sleuth tool-service``: serve one configured tool (work in progress)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("tool-service", help="serve one tool over MCP and JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("sleuth tool-service: not implemented yet", file=sys.stderr)
    return 2
