"""The agent service as a real process (``sleuth agent``), and a reader of its /metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
from prometheus_client.parser import text_string_to_metric_families

from sleuth.scripted.runner import free_port

HERE = Path(__file__).resolve().parent


class AgentProcess:
    """``sleuth agent`` on a free port with ``config`` (a dict) written to a file.

    ``tests/agent`` is on the child's PYTHONPATH, so tool factories such as
    ``agent_doubles:seed_sql_factory`` import. The child's output goes to ``log``.
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
        paths = (*map(str, self.pythonpath), str(HERE), env.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        env["SLEUTH_AGENT_NAME"] = self.name
        env["SLEUTH_AGENT_HOST"] = "127.0.0.1"
        cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
        cmd += ["agent", "--config", str(path), "--port", str(port)]
        with self.log.open("wb") as out:
            self._proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"agent exited with {self._proc.returncode}: {self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"agent did not start in 90 s: {self.output()}")
            time.sleep(0.1)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-3000:]

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def ask(self, question: str) -> httpx.Response:
        return httpx.post(f"{self.url}/v1/query", json={"question": question}, timeout=60)

    def metrics(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """Every sample of /metrics, keyed by (name, labels)."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        return {
            (s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    def value(self, name: str, **labels: str) -> float | None:
        return self.metrics().get((name, frozenset(labels.items())))

    def wait_for(self, name: str, at_least: float, timeout_s: float = 60, **labels: str) -> float:
        """Poll /metrics until ``name{labels}`` reaches ``at_least``; return its value."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.value(name, **labels)
            if value is not None and value >= at_least:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{name}{labels} is {value}, expected >= {at_least}\n{self.output()}"
                )
            time.sleep(0.1)
