"""Helpers for the operator tests: example manifests, polling, and the operator as a process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "contracts"
GOLDEN = Path(__file__).resolve().parent / "golden"


def example_docs() -> list[dict[str, Any]]:
    """Every document of examples/contracts, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return docs


def example(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        d
        for d in example_docs()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


T = TypeVar("T")


def eventually(check: Callable[[], T], *, timeout: float = 90.0, what: str = "") -> T:
    """Poll ``check`` until it returns a truthy value (not a timing assert: a generous deadline)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except AssertionError as err:
            last = err
        else:
            if last:
                return last
        time.sleep(0.5)
    raise AssertionError(f"never happened within {timeout:.0f}s: {what} (last: {last!r})")


class OperatorProcess:
    """``sleuth operator`` as a child process, startable, stoppable and killable."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path, *args: str, **env: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.log = log
        self.args = args
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        sleuth = Path(sys.executable).parent / "sleuth"
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                str(sleuth),
                "operator",
                "--kubeconfig",
                str(self.kubeconfig),
                "--namespace",
                self.namespace,
                "--resync-seconds",
                "5",
                *self.args,
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        out.close()

    def stop(self, *, kill: bool = False) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
