"""The scripted model server queues like vLLM and says so on /metrics: at most --max-num-seqs
chat requests run at once, the others wait, counted in vllm:num_requests_waiting (what the model
server's autoscaler reads), as a real process answering real HTTP."""

from __future__ import annotations

import threading

import httpx
import pytest

from sleuth.core.names import VLLM_REQUESTS_RUNNING, VLLM_REQUESTS_WAITING
from sleuth.core.process import free_port
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse
from tests.support.metrics import scrape
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

SLOW = Scenario(model="queued", fallback=ScriptedResponse(content="done", delay_ms=1500))


def _queue(port: int) -> tuple[float | None, float | None]:
    samples = scrape(port)
    label = frozenset({("model_name", "queued")})
    return samples.get((VLLM_REQUESTS_RUNNING, label)), samples.get((VLLM_REQUESTS_WAITING, label))


def test_requests_beyond_max_num_seqs_wait_and_are_counted() -> None:
    port = free_port()
    with ScriptedProcess(SLOW, port, "--max-num-seqs", "1") as server:
        assert _queue(port) == (0.0, 0.0)
        codes: list[int] = []

        def ask(stream: bool) -> None:
            body = {
                "model": "queued",
                "stream": stream,
                "messages": [{"role": "user", "content": "q"}],
            }
            with httpx.Client(timeout=30) as client:
                codes.append(
                    client.post(f"{server.base_url}/v1/chat/completions", json=body).status_code
                )

        threads = [threading.Thread(target=ask, args=(i % 2 == 0,)) for i in range(3)]
        for t in threads:
            t.start()
        eventually(
            lambda: _queue(port) == (1.0, 2.0) or None,
            timeout=20,
            what="one request running and two waiting",
            interval=0.05,
        )
        for t in threads:
            t.join(30)
        assert codes == [200, 200, 200]
        assert _queue(port) == (0.0, 0.0)


def test_metrics_are_open_like_vllms_even_with_an_api_key() -> None:
    port = free_port()
    with ScriptedProcess(SLOW, port, "--api-key", "k"):
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        assert "# TYPE vllm:num_requests_waiting gauge" in text
        assert httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=10).status_code == 401
