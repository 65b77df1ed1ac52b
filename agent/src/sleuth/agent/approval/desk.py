"""The approval desk of one agent service: gates for runs, the waiting runs, decisions, expiry.

:class:`ApprovalDesk` is built once per service (:class:`~sleuth.agent.service.AgentService`):

- :meth:`gate` gives each leg of a run its :class:`~sleuth.agent.approval.gate.TurnGate` — a run
  whose caller holds no ``approve`` grant (or has no room left to wait) gets its caught calls
  refused at once;
- :meth:`hold` keeps a paused run (:class:`~sleuth.agent.approval.pending.Pending`) until its
  caller decides or the tool's ``approval.timeoutSeconds`` runs out, and audits the pause;
- :meth:`decide` records a decision — in the run's trace, the audit trail, the active span (an
  event ``sleuth.approval``) and the metrics — before the run goes on;
- a timer takes out the runs past their deadline (decision ``expired``: the state is freed at
  once) and hands each to its ``on_expired`` continuation, which lets the model answer without
  the call; answers no one came back for wait in :meth:`late_answer`, bounded;
- :meth:`aclose` (the agent stops): every waiting run is decided ``refused`` ("the agent
  stopped") and audited, so none is lost silently. Waiting runs live in this process's memory:
  after a restart their ids are unknown, and a decision sent for one runs nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry

from sleuth.agent.access.audit import AuditLog
from sleuth.agent.access.caller import Caller
from sleuth.agent.access.tasks import owner_of
from sleuth.agent.approval.gate import PausedTurn, TurnGate, new_approval_id, utc_now
from sleuth.agent.approval.pending import (
    ApprovalsFull,
    Continuation,
    Counted,
    Pending,
    PendingApprovals,
)
from sleuth.agent.approval.rules import ApprovalRules
from sleuth.agent.trace import ApprovalRecord, Trace, Verdict
from sleuth.core.api.agent_config import ApprovalsConfig

log = logging.getLogger("sleuth.agent.approval")
TICK_S = 0.5
MAX_LATE_ANSWERS = 256
EVENT = "sleuth.approval"


def _expires_at(timeout_s: float) -> str:
    at = datetime.now(UTC) + timedelta(seconds=timeout_s)
    return at.isoformat(timespec="seconds").replace("+00:00", "Z")


class ApprovalDesk:
    def __init__(
        self,
        agent: str,
        rules: ApprovalRules,
        limits: ApprovalsConfig,
        registry: CollectorRegistry,
        audit: AuditLog,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules = rules
        self.pending = PendingApprovals(agent, limits, registry, clock)
        self.audit = audit
        self.clock = clock
        self.late: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._timer: asyncio.Task[None] | None = None
        self._continuations: set[asyncio.Task[None]] = set()

    def gate(self, caller: Caller | None, decided: ApprovalRecord | None = None) -> TurnGate | None:
        """The gate of one leg of ``caller``'s run (``decided``: the decision it resumes on)."""
        if not self.rules:
            return None
        if caller is None:
            cannot: str | None = "the run has no caller who could approve it"
        elif not caller.approve:
            cannot = f"caller {caller.name} holds no approve grant"
        else:
            cannot = self.pending.room_for(caller)
        calls = decided.calls if decided is not None else []
        return TurnGate(self.rules, {c.id: decided for c in calls if decided}, cannot)

    def hold(
        self,
        paused: PausedTurn,
        result: Any,
        caller: Caller,
        endpoint: str,
        question: str,
        task_id: str | None = None,
        on_expired: Continuation | None = None,
    ) -> Pending:
        """Keep a paused run; :class:`ApprovalsFull` when there is no room after all."""
        timeout_s = self.rules.timeout_s(c.tool for c in paused.calls)
        now = self.clock()
        pending = Pending(
            id=task_id or new_approval_id(),
            caller=caller,
            endpoint=endpoint,
            question=question,
            calls=paused.calls,
            requested_at=utc_now(),
            expires_at=_expires_at(timeout_s),
            deadline=now + timeout_s,
            started=now,
            result=result,
            counted=Counted.of(result.trace),
            task_id=task_id,
            on_expired=on_expired,
        )
        self.pending.add(pending)
        self.audit.approval(caller, endpoint, pending.id, list(paused.calls))
        return pending

    def refuse_now(self, paused: PausedTurn, trace: Trace, why: str) -> ApprovalRecord:
        """A paused run that could not be kept after all: its calls refused at once."""
        now = utc_now()
        record = ApprovalRecord(
            id=new_approval_id(),
            calls=list(paused.calls),
            decision="refused",
            reason=why,
            requested_at=now,
            decided_at=now,
            waited_ms=0.0,
        )
        trace.approvals.append(record)
        self.pending.count("refused", 0.0)
        return record

    def decide(
        self, pending: Pending, verdict: Verdict, by: Caller | None, reason: str
    ) -> ApprovalRecord:
        """Record a decision on a run taken out of the registry: trace, audit, span, metrics."""
        waited_s = self.pending.waited_s(pending)
        record = ApprovalRecord(
            id=pending.id,
            calls=list(pending.calls),
            decision=verdict,
            by=by.name if by is not None else None,
            subject=by.subject if by is not None else None,
            reason=reason,
            requested_at=pending.requested_at,
            decided_at=utc_now(),
            waited_ms=waited_s * 1000,
        )
        pending.result.trace.approvals.append(record)
        self.pending.count(verdict, waited_s)
        self.audit.approval(pending.caller, pending.endpoint, pending.id, record.calls, record)
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(
                EVENT,
                {
                    "sleuth.approval.id": pending.id,
                    "sleuth.approval.decision": verdict,
                    "sleuth.approval.by": record.by or "",
                    "sleuth.approval.tools": [c.tool for c in pending.calls],
                    "sleuth.approval.waited_ms": record.waited_ms,
                },
            )
        return record

    # -- expiry, late answers, stopping -----------------------------------------------------------

    async def start(self) -> None:
        if self.rules and self._timer is None:
            self._timer = asyncio.create_task(self._sweep_forever(), name="approval-expiry")

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.sweep()
            except Exception:  # never let the sweeper die: the next tick tries again
                log.exception("approval: expiring waiting runs failed")

    def sweep(self) -> None:
        """Take out the runs past their deadline; each goes on without its calls."""
        for pending in self.pending.expired():
            timeout_s = self.rules.timeout_s(c.tool for c in pending.calls)
            record = self.decide(pending, "expired", None, f"no decision within {timeout_s:g} s")
            if pending.on_expired is not None:
                task = asyncio.create_task(pending.on_expired(pending, record))
                self._continuations.add(task)
                task.add_done_callback(self._continued)

    def _continued(self, task: asyncio.Task[None]) -> None:
        self._continuations.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("approval: an expired run failed to answer", exc_info=task.exception())

    def remember_late(self, pending: Pending, answer: str) -> None:
        """The answer of a run that expired, for its caller if it comes back (bounded)."""
        self.late[(pending.owner, pending.id)] = answer
        while len(self.late) > MAX_LATE_ANSWERS:
            self.late.popitem(last=False)

    def late_answer(self, caller: Caller, approval_id: str) -> str | None:
        return self.late.pop((owner_of(caller), approval_id), None)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
        for pending in self.pending.drain():
            self.decide(pending, "refused", None, "the agent stopped before anyone decided")
        for task in list(self._continuations):
            task.cancel()
        await asyncio.gather(*self._continuations, return_exceptions=True)


__all__ = ["ApprovalDesk", "ApprovalsFull"]
