"""The ``sleuth`` command: one CLI whose subcommands are the product's processes.

Each subcommand lives next to the code it runs and exposes ``register(subparsers)``, which adds
its parser and sets ``func`` (called with the parsed namespace, returning an exit code). This
module only lists them, so ``sleuth --help`` never imports heavy dependencies of other commands.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

import sleuth

# name → module providing ``register(subparsers)`` (or ``module:function``); one line each.
COMMANDS: dict[str, str] = {
    "tool-service": "sleuth.agent.toolservice.cli",
    "ingest": "sleuth.agent.ingest",
    "sql": "sleuth.agent.tools.sql.cli",
    "agent": "sleuth.agent.cli",
    "crds": "sleuth.api.crdgen",
    "operator": "sleuth.operator.cli",
    "scripted-model": "sleuth.agent.scripted.cli",
    "eval": "sleuth.evals.cli",
    "demo": "sleuth.demo.cli:register_demo",
    "ask": "sleuth.demo.cli:register_ask",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sleuth",
        description="Kubernetes-native, tool-augmented retrieval agents.",
    )
    parser.add_argument("--version", action="version", version=f"sleuth {sleuth.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is not None and name != only:
            continue
        path, _, func = module.partition(":")
        getattr(importlib.import_module(path), func or "register")(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Import only the chosen subcommand's module when one is named.
    only = args_list[0] if args_list and args_list[0] in COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(args_list)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    return func(args)


def eval_main(argv: Sequence[str] | None = None) -> int:
    """``sleuth-eval ...`` is ``sleuth eval ...``."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    return main(["eval", *args_list])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
