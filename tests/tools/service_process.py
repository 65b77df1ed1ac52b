"""Start ``sleuth tool-service`` as a real process for tests, and stop it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import free_port, stop_process, wait_healthy


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
        wait_healthy(
            f"{self.url}/healthz",
            self.process,
            timeout=timeout,
            interval=0.2,
            name="tool service",
            output=self.log.read_text,
        )
        return self

    def stop(self) -> None:
        stop_process(self.process)


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
