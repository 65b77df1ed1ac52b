"""Walking a document's shell commands: the README's and docs/install.md's blocks, as written.

:func:`commands` reads every ```` ```sh ```` block of a Markdown text into :class:`Command`\\ s —
backslash continuations joined, a trailing ``  # comment`` kept apart (the guide writes what a
command prints there, e.g. ``# yes``). :func:`own_cluster` starts a test control plane of its own
(tests/cluster/up.sh) whose environment holds the pinned kubectl and helm and this venv's
``sleuth`` first on PATH, and removes it afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import ROOT

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Command:
    text: str  # the command, continuations joined
    comment: str  # what follows "  #" on its (last) line, stripped; "" without one
    block: int  # index of its block in the document


def blocks(markdown: str, lang: str = "sh") -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", markdown, flags=re.S)


def commands(markdown: str) -> list[Command]:
    out: list[Command] = []
    for index, block in enumerate(blocks(markdown)):
        pending = ""
        for raw in block.splitlines():
            line = raw.rstrip()
            if not line.strip() or (not pending and line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                pending += line[:-1].rstrip() + " "
                continue
            text, _, comment = (pending + line.strip()).partition("  #")
            out.append(Command(" ".join(text.split()), comment.strip(), index))
            pending = ""
    return out


@contextmanager
def own_cluster(name: str) -> Iterator[dict[str, str]]:
    """A cluster of its own named ``name``; yields the environment to run commands in."""
    env = {**os.environ, "SLEUTH_CLUSTER": name}
    up = subprocess.run(
        [str(ROOT / "tests" / "cluster" / "up.sh")], env=env, capture_output=True, text=True
    )
    if up.returncode != 0:
        subprocess.run([str(ROOT / "tests" / "cluster" / "down.sh")], env=env)
        raise RuntimeError(f"tests/cluster/up.sh failed:\n{up.stderr[-3000:]}")
    cache = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
    env["KUBECONFIG"] = up.stdout.strip().splitlines()[-1]
    env["PATH"] = f"{cache / 'bin' / 'current'}:{BIN}:{env['PATH']}"
    try:
        yield env
    finally:
        subprocess.run([str(ROOT / "tests" / "cluster" / "down.sh")], env=env)


__all__ = ["BIN", "Command", "blocks", "commands", "own_cluster"]
