"""The ``sleuth`` command: one CLI whose subcommands are the product's processes.

Each distribution declares its subcommands as entry points in the group ``sleuth.commands``
(``name = "module:function"``, the function adding its parser and setting ``func``, called with
the parsed namespace and returning an exit code). An image therefore offers exactly the commands
of what it installs: the operator's image has ``sleuth operator`` and ``sleuth crds``, not
``sleuth eval``. ``sleuth NAME`` imports only NAME's module; ``sleuth --help`` imports every
installed command's module to list it (their imports are at module level, so in the full image
that includes the agent's app: a few seconds).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points

from sleuth.core import __version__

GROUP = "sleuth.commands"


def commands() -> dict[str, str]:
    """Installed subcommands: name → ``module:function``, sorted by name."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    return dict(sorted(found.items()))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sleuth",
        description="Kubernetes-native, tool-augmented retrieval agents.",
    )
    parser.add_argument("--version", action="version", version=f"sleuth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, target in commands().items():
        if only is not None and name != only:
            continue
        path, _, func = target.partition(":")
        getattr(importlib.import_module(path), func or "register")(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Import only the chosen subcommand's module when one is named.
    only = args_list[0] if args_list and args_list[0] in commands() else None
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
