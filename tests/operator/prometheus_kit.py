"""A real Prometheus (Debian's package) for the tests: started on a free port with a given
configuration, asked through its HTTP API, stopped afterwards (its log printed on failure)."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import free_port, stop_process, wait_healthy

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


class Prometheus:
    """A Prometheus server on a free port, asked through its HTTP API."""

    def __init__(self, port: int, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = log

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        try:
            with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as response:
                body = response.read().decode()
        except (urllib.error.URLError, ConnectionError):
            return None
        return json.loads(body) if path.startswith("/api/") else body

    def ready(self) -> bool:
        return self.get("/-/ready") is not None

    def alerts(self, namespace: str, schedule: str) -> list[dict[str, Any]]:
        """Active (pending or firing) alerts of one EvalSchedule."""
        answer = self.get("/api/v1/alerts")
        assert answer, "Prometheus did not answer"
        assert answer["status"] == "success", answer
        return [
            a
            for a in answer["data"]["alerts"]
            if a["labels"].get("namespace") == namespace
            and a["labels"].get("eval_schedule") == schedule
        ]

    def value(self, query: str) -> float | None:
        answer = self.get("/api/v1/query", query=query) or {}
        result = (answer.get("data") or {}).get("result") or []
        return float(result[0]["value"][1]) if result else None

    def rule_groups(self) -> list[str]:
        """The names of the rule groups Prometheus loaded."""
        answer = self.get("/api/v1/rules")
        assert answer, "Prometheus did not answer"
        return [str(g["name"]) for g in answer["data"]["groups"]]


@contextmanager
def start_prometheus(tmp_path: Path, config: dict[str, Any]) -> Iterator[Prometheus]:
    """``prometheus`` with ``config`` (written to ``tmp_path``), ready; stopped on exit."""
    path = tmp_path / "prometheus.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log = tmp_path / "prometheus.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={path}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Prometheus(port, log)
    try:
        wait_healthy(f"{server.url}/-/ready", proc, timeout=60, interval=0.5, name="Prometheus")
        yield server
    except BaseException:
        print(f"--- prometheus log ---\n{log.read_text(errors='replace')[-4000:]}")
        raise
    finally:
        stop_process(proc, timeout=20)


__all__ = ["PROMETHEUS", "Prometheus", "start_prometheus"]
