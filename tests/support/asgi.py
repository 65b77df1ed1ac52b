"""An ASGI app (e.g. the agent's) served by uvicorn in a daemon thread, on a free loopback port."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

import uvicorn

from sleuth.core.process import LOOPBACK


class serve_app:
    """``with serve_app(app) as served:`` serves ``app`` until the block ends; ``url`` is its
    base URL (``http://127.0.0.1:<port>``)."""

    def __init__(self, app: Any) -> None:
        self._sock = socket.socket()
        self._sock.bind((LOOPBACK, 0))
        self.url = f"http://{LOOPBACK}:{self._sock.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._server.serve(sockets=[self._sock])), daemon=True
        )

    def __enter__(self) -> serve_app:
        self._thread.start()
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError("app did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
