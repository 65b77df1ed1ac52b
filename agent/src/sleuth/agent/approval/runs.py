"""Runs that pause and go on: a paused run held at the desk, a decision, the run resumed.

:class:`ApprovalRuns` is the service's (``service.approvals``); it drives the service's loop
(:meth:`~sleuth.agent.service.AgentService.loop`) and ends each leg as the service ends any run
(:meth:`~sleuth.agent.service.AgentService.finish`: the answer noted, streamed, measured,
audited). The fronts call it:

- :meth:`ApprovalRuns.hold` after a leg: a paused result waits at the desk, its answer replaced by
  what waits and how to decide (with no room left after all, its calls are refused and the run
  goes on at once);
- :meth:`ApprovalRuns.decide` with the owner's decision on a run it took out of the desk;
- :meth:`ApprovalRuns.addressed` for ``approve apr_...`` / ``reject apr_...`` sent as a question;
- :meth:`ApprovalRuns.resume` to go on under any decision (the expiry continuations use it).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Protocol

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.control import AccessControl
from sleuth.agent.approval.decision import Reply, not_pending_text, pending_text
from sleuth.agent.approval.desk import ApprovalDesk, ApprovalsFull
from sleuth.agent.approval.gate import TurnGate
from sleuth.agent.approval.pending import Continuation, Pending
from sleuth.agent.events import AnswerStream, RunListener
from sleuth.agent.loop import AgentResult
from sleuth.agent.trace import ApprovalRecord, Trace, Verdict


class Host(Protocol):
    """What :class:`ApprovalRuns` needs of the agent service."""

    name: str
    desk: ApprovalDesk
    access: AccessControl

    async def loop(
        self,
        question: str,
        history: list[dict[str, Any]],
        stream: AnswerStream | None,
        gate: TurnGate | None,
        resume: AgentResult | None = None,
    ) -> AgentResult: ...

    def finish(
        self,
        result: AgentResult,
        question: str,
        endpoint: str,
        caller: Caller | None,
        stream: AnswerStream | None,
        sample: bool,
        leg: Trace | None = None,
    ) -> AgentResult: ...


class ApprovalRuns:
    def __init__(self, host: Host) -> None:
        self.host = host
        self.desk = host.desk

    async def hold(
        self,
        result: AgentResult,
        caller: Caller | None,
        endpoint: str,
        question: str,
        stream: AnswerStream | None,
        task_id: str | None,
        on_expired: Continuation | None,
    ) -> AgentResult:
        """A paused leg waits at the desk (``on_expired``: how it goes on when nobody decides;
        default: its answer waits for its caller). Other results pass through."""
        while result.paused is not None:
            paused = result.paused
            try:
                if caller is None:
                    raise ApprovalsFull("the run has no caller who could approve it")
                pending = self.desk.hold(
                    paused, result, caller, endpoint, question, task_id, on_expired or self._expired
                )
            except ApprovalsFull as full:
                record = self.desk.refuse_now(paused, result.trace, str(full))
                gate = TurnGate(self.desk.rules, {c.id: record for c in record.calls})
                result = await self.host.loop(question, [], stream, gate, resume=result)
                continue
            text = pending_text(pending.id, paused.calls, pending.expires_at, task_id is not None)
            return dataclasses.replace(result, answer=text, approval=pending)
        return result

    async def decide(
        self,
        caller: Caller,
        pending: Pending,
        reply: Reply,
        endpoint: str,
        listener: RunListener | None = None,
    ) -> AgentResult:
        """``caller``'s decision on its waiting run ``pending`` (taken out of the desk): recorded,
        then the run goes on — approved calls run, rejected ones are refused."""
        verdict: Verdict = (
            "approved" if reply.choice == "approve" and caller.approve else "rejected"
        )
        record = self.desk.decide(pending, verdict, caller, reply.reason)
        return await self.resume(pending, record, endpoint, listener)

    async def resume(
        self,
        pending: Pending,
        record: ApprovalRecord,
        endpoint: str,
        listener: RunListener | None = None,
        sample: bool = True,
    ) -> AgentResult:
        """Go on with a waiting run under ``record``, its decision."""
        stream = AnswerStream(listener) if listener is not None else None
        caller, question = pending.caller, pending.question
        gate = self.desk.gate(caller, record)
        started = time.perf_counter()
        result = await self.host.loop(question, [], stream, gate, resume=pending.result)
        result = await self.hold(
            result, caller, endpoint, question, stream, pending.task_id, pending.on_expired
        )
        leg = pending.counted.leg(result.trace, (time.perf_counter() - started) * 1000)
        return self.host.finish(result, question, endpoint, caller, stream, sample, leg)

    async def addressed(
        self, reply: Reply, caller: Caller, endpoint: str, listener: RunListener | None
    ) -> AgentResult:
        """A decision sent as a question (``approve apr_...``): on the caller's own waiting run
        of that id, or an answer saying none waits (and, if it expired, the answer given)."""
        pending = self.desk.pending.take(caller, reply.approval_id)
        if pending is not None and pending.task_id is None:
            return await self.decide(caller, pending, reply, endpoint, listener)
        if pending is not None:  # an A2A task's: decided in its task, not here
            self.desk.pending.add(pending)
        answer = not_pending_text(
            reply.approval_id, self.desk.late_answer(caller, reply.approval_id)
        )
        self.host.access.refused(caller, endpoint, "approval_not_pending", None)
        if listener is not None:
            AnswerStream(listener).finish(answer)
        return AgentResult(answer, [], Trace(question=reply.approval_id, model=self.host.name))

    async def _expired(self, pending: Pending, record: ApprovalRecord) -> None:
        """Nobody decided in time: the run goes on without the calls, and its answer waits for
        its caller (:meth:`ApprovalDesk.late_answer`). The A2A front sets its own continuation:
        the task completes."""
        result = await self.resume(pending, record, pending.endpoint, sample=False)
        self.desk.remember_late(pending, result.answer)


__all__ = ["ApprovalRuns", "Host"]
