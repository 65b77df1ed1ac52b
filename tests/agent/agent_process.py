"""The agent service as a real process (``sleuth agent``), and a reader of its /metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Self

import httpx

from sleuth.core.process import free_port, stop_process, wait_healthy
from tests.support.metrics import Samples, parse_samples
from tests.support.paths import ROOT
from tests.support.polling import eventually


class AgentProcess:
    """``sleuth agent`` on a free port with ``config`` (a dict) written to a file.

    The repository root is on the child's PYTHONPATH, so tool factories such as
    ``tests.agent.agent_doubles:seed_sql_factory`` import. The child's output goes to ``log``.
    """

    def __init__(
        self,
        config: dict[str, Any],
        workdir: Path,
        name: str = "ops",
        pythonpath: tuple[Path, ...] = (),
    ) -> None:
        self.config = config
        self.pythonpath = pythonpath
        self.workdir = workdir
        self.name = name
        self.log = workdir / f"agent-{name}.log"
        self.url = ""
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        path = self.workdir / f"agent-{self.name}.json"
        path.write_text(json.dumps(self.config), encoding="utf-8")
        port = free_port()
        env = dict(os.environ)
        paths = (*map(str, self.pythonpath), str(ROOT), env.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env["SLEUTH_AGENT_NAME"] = self.name
        env["SLEUTH_AGENT_HOST"] = "127.0.0.1"
        cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
        cmd += ["agent", "--config", str(path), "--port", str(port)]
        with self.log.open("wb") as out:
            self._proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        wait_healthy(
            f"{self.url}/healthz", self._proc, timeout=90, name="agent", output=self.output
        )
        return self

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def ask(self, question: str) -> httpx.Response:
        return httpx.post(f"{self.url}/v1/query", json={"question": question}, timeout=60)

    def metrics(self) -> Samples:
        """Every sample of /metrics, keyed by (name, labels)."""
        return parse_samples(httpx.get(f"{self.url}/metrics", timeout=10).text)

    def value(self, name: str, **labels: str) -> float | None:
        return self.metrics().get((name, frozenset(labels.items())))

    def wait_for(self, name: str, at_least: float, timeout_s: float = 60, **labels: str) -> float:
        """Poll /metrics until ``name{labels}`` reaches ``at_least``; return its value."""

        def reached() -> tuple[float]:
            value = self.value(name, **labels)
            assert value is not None, f"{name}{labels} is not served"
            assert value >= at_least, f"{name}{labels} is {value}, expected >= {at_least}"
            return (value,)

        try:
            (value,) = eventually(reached, timeout_s, f"{name}{labels}", interval=0.1)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{self.output()}") from None
        return value
