"""Local child processes that serve HTTP: a free port, a wait until healthy, a clean stop.

The scripted model server's process runner, the laptop demo, the benchmarks and the tests all
start services on loopback ports and wait for them to answer; this module is the one copy of how.
It uses only the standard library (no HTTP client), so every distribution can import it.
"""

from __future__ import annotations

import http.client
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from sleuth.core.errors import SleuthError

LOOPBACK = "127.0.0.1"
# Loopback health checks never go through a proxy named in the environment.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class NotHealthy(SleuthError, RuntimeError):
    """A child process exited, or did not answer its health URL before the deadline."""


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that nothing listens on right now (bound, then released).

    Also a dead address: a URL on this port is refused until something binds it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
    return port


def answers(url: str, timeout: float = 1.0) -> bool:
    """Whether ``GET url`` answers 200 now (a refused, failed or slow request is ``False``)."""
    try:
        with _DIRECT.open(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (OSError, http.client.HTTPException):
        return False


def wait_healthy(
    url: str,
    process: subprocess.Popen[Any] | None = None,
    *,
    timeout: float,
    interval: float = 0.1,
    name: str = "process",
    output: Callable[[], str] | None = None,
) -> None:
    """Poll ``GET url`` until it answers 200, at most ``timeout`` seconds.

    With ``process``, its exit ends the wait at once, and a process that is not healthy by the
    deadline is stopped. :class:`NotHealthy` names ``name`` and adds ``output()`` (e.g. the
    tail of its log) when given.
    """
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise NotHealthy(f"{name} exited with {process.returncode}{_detail(output)}")
        if answers(url):
            return
        if time.monotonic() > deadline:
            if process is not None:
                stop_process(process)
            raise NotHealthy(f"{name} did not answer {url} within {timeout:g} s{_detail(output)}")
        time.sleep(interval)


def stop_process(
    process: subprocess.Popen[Any], timeout: float = 15.0, *, sig: int = signal.SIGTERM
) -> None:
    """Send ``sig`` (SIGTERM) to ``process`` and wait; kill it if it is still there after
    ``timeout`` seconds. A process that has already exited is only reaped."""
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _detail(output: Callable[[], str] | None) -> str:
    return f": {output()}" if output is not None else ""
