"""Waking a model server that sleeps at zero replicas, without failing the caller.

With ``spec.model.autoscaling`` the model server may be scaled to zero: its Service then has no
endpoint, and a call is refused at once (connection refused, or 502/503 from a proxy in
between). :class:`WakingModel` wraps the agent's model client; when a call finds the server
asleep it:

1. counts the request in ``sleuth_agent_requests_waiting_for_model`` (:class:`ModelWake`): the
   series the model server's ScaledObject activates on (a sleeping server exports nothing, so
   the agent's series is what wakes it);
2. asks the server's ``/models`` every :data:`POLL_SECONDS` until it answers or the bound
   (``wakeWaitSeconds``) is over — inside the request's own timeout, since the wait happens in
   the loop's model step;
3. calls again once it is awake; when the bound is over first it raises :class:`ModelAsleep`
   (not retried), so the loop stops with a model error and the agent answers through its
   deterministic router, saying so (:meth:`sleuth.agent.service.AgentService.run`): no 5xx.

A request counts in the series for at least :data:`SIGNAL_SECONDS`, even when it gave up
earlier (``wakeWaitSeconds: 0`` answers through the router at once): long enough for two
scrapes at 15 s, so Prometheus, and KEDA after it, see that someone asked.

::

    call ──ok──────────────────────────────────────────────▶ turn
      │ refused / 502 / 503
      ▼
    waiting +1 ──ping ok──▶ call again ──▶ turn
      │ bound over                          (waiting -1 after SIGNAL_SECONDS)
      ▼
    ModelAsleep ──▶ loop: model_error ──▶ router answers, degraded

Online scoring (:mod:`sleuth.agent.onlineeval`), whose judge is by default the same model server,
wakes it the same way: a judge call refused by a sleeping server (:func:`judge_asleep`) waits
through the same :class:`ModelWake`, counted in the same series, up to the same bound, and is
asked once more; a server that does not wake in time costs that sample its score (counted as
skipped, reason ``model_asleep``), never an error loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import Gauge

from sleuth.core.chatwire import ModelTurn, TextSink
from sleuth.core.errors import ModelError, ModelTimeout, ModelUnavailable
from sleuth.core.llm import OpenAIChatModel

POLL_SECONDS = 0.5
SIGNAL_SECONDS = 30.0
ASLEEP_STATUSES = frozenset({502, 503})


class ModelAsleep(ModelError):
    """The model server was asleep and did not wake within the bound: not retried (the wait
    was the retry); the router answers instead."""

    retryable = False


def asleep(error: ModelError) -> bool:
    """Whether ``error`` says the server is not there at all (refused, or a proxy's 502/503),
    as a server scaled to zero is; a timeout or another status is a server that is there."""
    if isinstance(error, ModelTimeout) or not isinstance(error, ModelUnavailable):
        return False
    return error.status is None or error.status in ASLEEP_STATUSES


def judge_asleep(reason: str) -> bool:
    """Whether a judge call that failed with ``reason`` (a :class:`JudgeError` category) found
    the server not there at all, as :func:`asleep` says of the agent's own calls."""
    return reason == "connection" or reason in {f"http_{s}" for s in ASLEEP_STATUSES}


class ModelWake:
    """Waits for the model server to answer, counted in the waiting-for-model gauge."""

    def __init__(
        self,
        ping: Callable[[], Awaitable[str | None]],
        bound_s: float,
        gauge: Gauge,
        *,
        poll_s: float = POLL_SECONDS,
        signal_s: float = SIGNAL_SECONDS,
    ) -> None:
        self.ping = ping
        self.bound_s = bound_s
        self.gauge = gauge
        self.poll_s = poll_s
        self.signal_s = signal_s

    async def wait(self) -> bool:
        """True once the server answers, False when the bound is over first."""
        started = time.monotonic()
        self.gauge.inc()
        try:
            while True:
                if await self.ping() is None:
                    return True
                left = started + self.bound_s - time.monotonic()
                if left <= 0:
                    return False
                await asyncio.sleep(min(self.poll_s, left))
        finally:
            held = started + self.signal_s - time.monotonic()
            if held > 0:
                asyncio.get_running_loop().call_later(held, self.gauge.dec)
            else:
                self.gauge.dec()


class WakingModel:
    """``inner`` (the agent's model client) that waits for a sleeping server (see the module)."""

    def __init__(self, inner: OpenAIChatModel, wake: ModelWake) -> None:
        self.inner = inner
        self.wake = wake
        self.name = inner.name
        self.tool_calling = inner.tool_calling
        self.streams_text = inner.streams_text

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_text: TextSink | None = None,
    ) -> ModelTurn:
        try:
            return await self.inner.complete(messages, tools, on_text=on_text)
        except ModelError as err:
            if not asleep(err):
                raise
            if not await self.wake.wait():
                raise ModelAsleep(
                    f"model server asleep (scaled to zero): not awake after {self.wake.bound_s:g} s"
                ) from err
        return await self.inner.complete(messages, tools, on_text=on_text)


__all__ = [
    "POLL_SECONDS",
    "SIGNAL_SECONDS",
    "ModelAsleep",
    "ModelWake",
    "WakingModel",
    "asleep",
    "judge_asleep",
]
