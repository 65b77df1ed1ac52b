"""sleuth.core.process: a free port, waiting for a child's health URL, stopping a child."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sleuth.core.errors import SleuthError
from sleuth.core.process import (
    LOOPBACK,
    NotHealthy,
    answers,
    free_port,
    stop_process,
    wait_healthy,
)

pytestmark = pytest.mark.integration


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/healthz" else 503)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def health_url() -> Iterator[str]:
    server = ThreadingHTTPServer((LOOPBACK, 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://{LOOPBACK}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _child(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_free_port_can_be_bound_and_nothing_answers_there() -> None:
    port = free_port()
    assert not answers(f"http://{LOOPBACK}:{port}/healthz")
    with socket.socket() as sock:
        sock.bind((LOOPBACK, port))


def test_answers_only_a_200(health_url: str) -> None:
    assert answers(f"{health_url}/healthz")
    assert not answers(f"{health_url}/readyz")  # 503


def test_wait_healthy_returns_once_the_url_answers(health_url: str) -> None:
    child = _child("import time; time.sleep(30)")
    try:
        wait_healthy(f"{health_url}/healthz", child, timeout=5)
        assert child.poll() is None
    finally:
        stop_process(child)


def test_a_child_that_exits_ends_the_wait_at_once_with_its_code() -> None:
    child = _child("raise SystemExit(3)")
    started = time.monotonic()
    with pytest.raises(NotHealthy, match="svc exited with 3: the log"):
        wait_healthy(
            f"http://{LOOPBACK}:{free_port()}/healthz",
            child,
            timeout=30,
            name="svc",
            output=lambda: "the log",
        )
    assert time.monotonic() - started < 10


def test_a_child_unhealthy_at_the_deadline_is_stopped() -> None:
    child = _child("import time; time.sleep(60)")
    url = f"http://{LOOPBACK}:{free_port()}/healthz"
    with pytest.raises(NotHealthy, match=r"did not answer .*/healthz within 0.5 s") as err:
        wait_healthy(url, child, timeout=0.5)
    assert child.poll() is not None
    assert isinstance(err.value, SleuthError)
    assert isinstance(err.value, RuntimeError)


def test_stop_kills_a_child_that_ignores_sigterm() -> None:
    code = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stdout.readline() == b"ready\n"  # SIGTERM is ignored from here on
    stop_process(child, timeout=1)
    child.stdout.close()
    assert child.returncode == -9
    stop_process(child)  # an exited child is only reaped
