"""``sleuth scripted-model`` as a real process on a chosen port (the test double of a vLLM pod)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Self

from sleuth.core.process import LOOPBACK, stop_process, wait_healthy


class ScriptedProcess:
    """The scripted model server in its own process on ``port``, serving ``scenario`` (a dict);
    ``args``: more flags (``--max-num-seqs 1``). Its output goes to ``workdir``."""

    def __init__(
        self, port: int, scenario: dict[str, Any], workdir: Path, *args: str
    ) -> None:
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
        self.scenario = scenario
        self.workdir = workdir
        self.args = args
        self.log = workdir / f"scripted-{port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        path = self.workdir / f"scenario-{self.port}.json"
        path.write_text(json.dumps(self.scenario), encoding="utf-8")
        cmd = [sys.executable, "-m", "sleuth.scripted", "--scenario", str(path)]
        cmd += ["--host", LOOPBACK, "--port", str(self.port), *self.args]
        with self.log.open("wb") as out:
            self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        wait_healthy(f"{self.url}/health", self._proc, timeout=60, name="scripted model")
        return self

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
