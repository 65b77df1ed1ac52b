"""The scripted server's engine queue and its vLLM series: ``vllm:num_requests_running`` and
``vllm:num_requests_waiting`` on ``GET /metrics``, named and shaped as vLLM exports them (gauges
labelled ``model_name``), so the autoscalers that read a real vLLM read this double the same way.

A real vLLM runs at most ``--max-num-seqs`` sequences at once and queues the rest; so does this:
:class:`Engine` admits ``max_running`` chat requests at a time (default :data:`MAX_RUNNING`, as
vLLM's default), the others wait their turn, counted as waiting. A request is running from its
admission until its last byte is written (a stream's included).
"""

from __future__ import annotations

import asyncio

from sleuth.core.names import VLLM_REQUESTS_RUNNING, VLLM_REQUESTS_WAITING

MAX_RUNNING = 256
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Engine:
    """Counts running and waiting requests; at most ``max_running`` run at once."""

    def __init__(self, max_running: int = MAX_RUNNING) -> None:
        if max_running < 1:
            raise ValueError("max_running must be at least 1")
        self.max_running = max_running
        self.running = 0
        self.waiting = 0
        self._slots: asyncio.Semaphore | None = None

    def _semaphore(self) -> asyncio.Semaphore:
        if self._slots is None:  # made in the server's event loop
            self._slots = asyncio.Semaphore(self.max_running)
        return self._slots

    async def admit(self) -> None:
        """Wait for a slot (counted as waiting meanwhile); pair with :meth:`done`."""
        self.waiting += 1
        try:
            await self._semaphore().acquire()
        finally:
            self.waiting -= 1
        self.running += 1

    def done(self) -> None:
        self.running -= 1
        self._semaphore().release()

    def exposition(self, model: str) -> str:
        """The two series in Prometheus' text format."""
        label = model.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        lines = []
        for name, help_text, value in (
            (VLLM_REQUESTS_RUNNING, "Number of requests currently running on GPU.", self.running),
            (VLLM_REQUESTS_WAITING, "Number of requests waiting to be processed.", self.waiting),
        ):
            lines += [
                f"# HELP {name} {help_text}",
                f"# TYPE {name} gauge",
                f'{name}{{model_name="{label}"}} {float(value)}',
            ]
        return "\n".join(lines) + "\n"


__all__ = ["MAX_RUNNING", "METRICS_CONTENT_TYPE", "Engine"]
