"""Start ``sleuth tool-service`` as a real process for tests, and stop it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class ServiceProcess:
    """``sleuth tool-service --config <file>`` on a free port, waited for until /healthz answers."""

    def __init__(self, config: dict[str, Any], folder: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        path = folder / f"tool-{self.port}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log = folder / f"tool-{self.port}.log"
        full_env = {**os.environ, **env}
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "sleuth.core.cli",
                    "tool-service",
                    "--config",
                    str(path),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                ],
                env=full_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_healthy(self, timeout: float = 120.0) -> ServiceProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tool service exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"tool service not healthy after {timeout} s: {self.log.read_text()}")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def sql_binding(**sql: Any) -> dict[str, Any]:
    return {
        "agentRef": {"name": "contracts-agent"},
        "type": "sql_query",
        "sqlQuery": {
            "connectionSecretRef": {"name": "pg", "key": "uri"},
            "allowedTables": ["contracts"],
            **sql,
        },
    }


def vector_binding() -> dict[str, Any]:
    return {
        "agentRef": {"name": "contracts-agent"},
        "type": "vector_search",
        "vectorSearch": {"url": "http://qdrant.invalid:6333", "collection": "contracts"},
    }
