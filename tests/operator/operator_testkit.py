"""Helpers for the operator tests: example manifests, goldens, and the operator as a process."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import stop_process
from tests.support.paths import EXAMPLES, SLEUTH

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
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                str(SLEUTH),
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
        stop_process(self.proc, timeout=20, sig=signal.SIGKILL if kill else signal.SIGTERM)
        self.proc = None

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""
