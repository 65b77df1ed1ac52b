"""Run the scripted server: in a thread of this process, or as a separate process.

Both runners share one small API: ``start()`` returns the runner, ``url`` is the OpenAI base URL
(ending in ``/v1``), ``requests()`` returns the chat requests received so far, ``set_scenario()``
replaces the script, ``stop()`` ends it; both are context managers.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
import uvicorn

from sleuth.core.process import LOOPBACK, NotHealthy, free_port, stop_process, wait_healthy
from sleuth.scripted.app import create_app
from sleuth.scripted.scenario import Scenario
from sleuth.scripted.state import Responder, ScriptState

HOST = LOOPBACK


class _Runner:
    base_url: str

    @property
    def url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:41234/v1``."""
        return f"{self.base_url}/v1"

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ScriptedServer(_Runner):
    """The scripted server on a free port, served by uvicorn in a daemon thread.

    ``responder`` (optional) is called with each chat request body before the scenario's rules;
    returning a :class:`ScriptedResponse` answers the request, ``None`` falls through.
    ``api_key`` (optional): the bearer token the API routes require, as vLLM's ``--api-key``.
    """

    def __init__(
        self,
        scenario: Scenario | None = None,
        responder: Responder | None = None,
        api_key: str | None = None,
    ) -> None:
        self.state = ScriptState(scenario or Scenario(), responder, api_key)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def start(self) -> Self:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(self.state), log_level="warning", access_log=False, lifespan="off"
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])),
            name=f"scripted-model-{port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("scripted server did not start within 10 s")
            time.sleep(0.01)
        self.base_url = f"http://{HOST}:{port}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def requests(self) -> list[dict[str, Any]]:
        return list(self.state.requests)

    def traceparents(self) -> list[str | None]:
        """The ``traceparent`` header of each chat request received (None: it had none)."""
        return list(self.state.traceparents)

    def clear_requests(self) -> None:
        self.state.clear_requests()

    def set_scenario(self, scenario: Scenario) -> None:
        self.state.replace(scenario)


class ScriptedProcess(_Runner):
    """The scripted server as a child process (``python -m sleuth.scripted``).

    Use it when the server must not share the caller's interpreter, e.g. in a benchmark.
    """

    def __init__(
        self, scenario: Scenario | None = None, port: int | None = None, *args: str
    ) -> None:
        """``port``: where to listen (default: a free one), e.g. the address a client already
        uses while nothing answers there; ``args``: more flags (``--max-num-seqs``)."""
        self.scenario = scenario or Scenario()
        self.port = port
        self.args = args
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self.base_url = ""

    def start(self) -> Self:
        self._dir = tempfile.TemporaryDirectory(prefix="sleuth-scripted-")
        path = Path(self._dir.name) / "scenario.json"
        path.write_text(self.scenario.model_dump_json(by_alias=True), encoding="utf-8")
        port = self.port or free_port()
        cmd = [sys.executable, "-m", "sleuth.scripted", "--scenario", str(path)]
        cmd += ["--host", HOST, "--port", str(port), *self.args]
        self._proc = subprocess.Popen(cmd, env=dict(os.environ))
        self.base_url = f"http://{HOST}:{port}"
        try:
            wait_healthy(
                f"{self.base_url}/health",
                self._proc,
                timeout=20,
                interval=0.05,
                name="scripted server",
            )
        except NotHealthy:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, timeout=10)
            self._proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def requests(self) -> list[dict[str, Any]]:
        response = httpx.get(f"{self.base_url}/_scripted/requests", timeout=10)
        response.raise_for_status()
        data: list[dict[str, Any]] = response.json()
        return data

    def traceparents(self) -> list[str | None]:
        """The ``traceparent`` header of each chat request received (None: it had none)."""
        response = httpx.get(f"{self.base_url}/_scripted/requests?kind=traceparent", timeout=10)
        response.raise_for_status()
        data: list[str | None] = response.json()
        return data

    def clear_requests(self) -> None:
        httpx.delete(f"{self.base_url}/_scripted/requests", timeout=10).raise_for_status()

    def set_scenario(self, scenario: Scenario) -> None:
        body = scenario.model_dump(mode="json", by_alias=True)
        httpx.put(f"{self.base_url}/_scripted/scenario", json=body, timeout=10).raise_for_status()
        self.scenario = scenario
