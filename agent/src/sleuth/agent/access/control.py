"""Access control of one agent service: identities, fair admission, audit and per-caller metrics.

:class:`AccessControl` is built once per app (:func:`sleuth.agent.api.create_app`) and owns the
:class:`~sleuth.agent.access.identity.Authenticator` (its key directories and JWKS are read at
start and refreshed by a timer task), the :class:`~sleuth.agent.access.fairshare.FairShare` of
``maxConcurrentRequests``, the :class:`~sleuth.agent.access.audit.AuditLog` and two series on the
agent's ``/metrics`` for chargeback:

- ``sleuth_agent_caller_requests_total{agent, caller, endpoint, outcome}``: requests per caller
  (``caller="unauthenticated"`` for the refused ones);
- ``sleuth_agent_caller_tokens_total{agent, caller, kind=prompt|completion}``: model tokens spent
  on each caller's requests.

Caller names come from the configuration, so the label values are bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter

from sleuth.agent.access.audit import AuditLog
from sleuth.agent.access.caller import Caller
from sleuth.agent.access.fairshare import FairShare
from sleuth.agent.access.identity import Authenticator
from sleuth.agent.trace import Trace
from sleuth.core.api.access_config import AccessConfig
from sleuth.core.names import AGENT_LABEL

log = logging.getLogger("sleuth.agent.access")

CALLER_REQUESTS = "sleuth_agent_caller_requests_total"
CALLER_TOKENS = "sleuth_agent_caller_tokens_total"
UNAUTHENTICATED = "unauthenticated"
TICK_S = 1.0


class AccessControl:
    def __init__(
        self,
        config: AccessConfig | None,
        *,
        agent: str,
        max_concurrent: int,
        registry: CollectorRegistry,
        audit_sink: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.agent = agent
        self.authenticator = Authenticator(config)
        self.fair = FairShare(max_concurrent)
        self.audit = AuditLog(agent, config.audit.question if config else "full", audit_sink)
        self.requests = Counter(
            CALLER_REQUESTS,
            "Requests per caller, by endpoint and outcome.",
            [AGENT_LABEL, "caller", "endpoint", "outcome"],
            registry=registry,
        )
        self.tokens = Counter(
            CALLER_TOKENS,
            "Model tokens spent on each caller's requests.",
            [AGENT_LABEL, "caller", "kind"],
            registry=registry,
        )
        self._timer: asyncio.Task[None] | None = None
        self._reload_s = float(config.key_reload_seconds) if config else 0.0

    async def start(self) -> None:
        """Read keys and JWKS (a failure refuses those callers, logged), start the refresher."""
        if self.config is None:
            return
        await self.authenticator.start()
        for problem in self.authenticator.problems():
            log.error("access: %s (refused until fixed)", problem)
        self._timer = asyncio.create_task(self._refresh_forever(), name="access-refresh")

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self._reload_s)
            try:
                await self.authenticator.tick()
            except Exception:  # never let the refresher die: the next tick tries again
                log.exception("access: refreshing keys and JWKS failed")

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer

    def unauthenticated(self, path: str) -> None:
        endpoint = endpoint_of(path)
        self.requests.labels(self.agent, UNAUTHENTICATED, endpoint, "unauthenticated").inc()
        self.audit.refused(None, endpoint, "unauthenticated")

    def refused(self, caller: Caller, endpoint: str, outcome: str, question: str | None) -> None:
        self.requests.labels(self.agent, caller.name, endpoint, outcome).inc()
        self.audit.refused(caller, endpoint, outcome, question)

    def ran(
        self,
        caller: Caller,
        endpoint: str,
        question: str,
        trace: Trace,
        trace_id: str | None,
        outcome: str = "answered",
    ) -> None:
        self.requests.labels(self.agent, caller.name, endpoint, outcome).inc()
        if trace.prompt_tokens:
            self.tokens.labels(self.agent, caller.name, "prompt").inc(trace.prompt_tokens)
        if trace.completion_tokens:
            self.tokens.labels(self.agent, caller.name, "completion").inc(trace.completion_tokens)
        self.audit.answered(caller, endpoint, question, trace, trace_id, outcome)


ENDPOINTS = {
    "/v1/query": "query",
    "/v1/chat/completions": "chat_completions",
    "/a2a": "a2a",
    "/v1/models": "models",
    "/v1/eval/first-step": "first_step",
}


def endpoint_of(path: str) -> str:
    """The endpoint label of a path (bounded: unknown paths are ``other``)."""
    return ENDPOINTS.get(path, "other")


__all__ = ["CALLER_REQUESTS", "CALLER_TOKENS", "AccessControl", "endpoint_of"]
