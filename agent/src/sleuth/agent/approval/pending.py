"""Runs that wait for a person: kept in memory, per caller, bounded in number and in time.

:class:`PendingApprovals` holds each paused run (:class:`Pending`) under its owner (the caller
who started it, :func:`~sleuth.agent.access.tasks.owner_of`) and its id. Only that owner can
take it back out (:meth:`PendingApprovals.take`): another caller's id is "not pending", whether
it exists or not. At most ``maxPendingPerCaller`` runs per caller and ``maxPending`` in all wait
at once; a run past its deadline is taken out by :meth:`PendingApprovals.expired`, which the
owner of the registry calls on a timer.

Series on the agent's ``/metrics``:

- ``sleuth_agent_approvals_pending{agent, caller}``: runs waiting now;
- ``sleuth_agent_approval_oldest_pending_seconds{agent}``: how long the oldest one has waited
  (0 when none);
- ``sleuth_agent_approval_decisions_total{agent, decision}``: decisions (approved, rejected,
  expired, refused);
- ``sleuth_agent_approval_wait_seconds{agent, decision}``: how long runs waited for them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.tasks import owner_of
from sleuth.agent.trace import ApprovalRecord, PendingCall, Trace, Verdict
from sleuth.core.api.agent_config import ApprovalsConfig
from sleuth.core.names import AGENT_LABEL

APPROVALS_PENDING = "sleuth_agent_approvals_pending"
APPROVAL_OLDEST = "sleuth_agent_approval_oldest_pending_seconds"
APPROVAL_DECISIONS = "sleuth_agent_approval_decisions_total"
APPROVAL_WAIT = "sleuth_agent_approval_wait_seconds"
_WAIT_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 86400.0)


Continuation = Callable[["Pending", ApprovalRecord], Coroutine[Any, Any, None]]
"""How a waiting run goes on when nobody decided in time."""


class ApprovalsFull(Exception):
    """No room for another waiting run (the caller's share, or the replica's)."""


@dataclass(frozen=True, slots=True)
class Counted:
    """What the metrics and the audit already counted of a run when it paused: the next leg
    counts only what it adds (its steps, tokens and time), not the run from its start."""

    steps: int
    iterations: int
    prompt_tokens: int
    completion_tokens: int
    malformed: int
    cache_hits: int

    @classmethod
    def of(cls, trace: Trace) -> Counted:
        return cls(
            len(trace.steps),
            trace.iterations,
            trace.prompt_tokens,
            trace.completion_tokens,
            trace.malformed_tool_calls,
            trace.cache_hits,
        )

    def leg(self, trace: Trace, ms: float) -> Trace:
        """The part of ``trace`` a leg that began at this count added, ``ms`` long."""
        return trace.model_copy(
            update={
                "steps": trace.steps[self.steps :],
                "iterations": trace.iterations - self.iterations,
                "prompt_tokens": trace.prompt_tokens - self.prompt_tokens,
                "completion_tokens": trace.completion_tokens - self.completion_tokens,
                "malformed_tool_calls": trace.malformed_tool_calls - self.malformed,
                "cache_hits": trace.cache_hits - self.cache_hits,
                "total_ms": ms,
            }
        )


@dataclass(slots=True)
class Pending:
    """A paused run: whose it is, what waits, until when, and how to go on."""

    id: str
    caller: Caller
    endpoint: str
    question: str
    calls: tuple[PendingCall, ...]
    requested_at: str
    expires_at: str  # UTC, ISO 8601: what the person is told
    deadline: float  # on the registry's clock
    started: float  # on the registry's clock
    result: Any  # the paused AgentResult (sleuth.agent.loop), resumed from
    counted: Counted  # of its trace, when it paused
    task_id: str | None = None  # the A2A task that waits (its front completes it on expiry)
    # how the run goes on when nobody decided in time (the front that paused it sets it)
    on_expired: Continuation | None = field(default=None, repr=False)

    @property
    def owner(self) -> str:
        return owner_of(self.caller)

    def as_json(self) -> dict[str, Any]:
        """What the fronts show of a waiting run (A2A: the data part of the task's status;
        the OpenAI API and /v1/query: ``approval``, with the messages that decide)."""
        shown: dict[str, Any] = {
            "id": self.id,
            "status": "pending",
            "calls": [c.model_dump(mode="json") for c in self.calls],
            "expiresAt": self.expires_at,
        }
        if self.task_id is None:
            shown |= {"approve": f"approve {self.id}", "reject": f"reject {self.id}: <reason>"}
        return shown


class PendingApprovals(Collector):
    """The waiting runs of one agent replica."""

    def __init__(
        self,
        agent: str,
        limits: ApprovalsConfig,
        registry: CollectorRegistry,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.agent = agent
        self.limits = limits
        self.clock = clock
        self._runs: dict[tuple[str, str], Pending] = {}
        self._callers: set[str] = set()  # configured names: bounded; their series stay at 0
        self.decisions = Counter(
            APPROVAL_DECISIONS,
            "Decisions on tool calls that waited for approval, by decision.",
            [AGENT_LABEL, "decision"],
            registry=registry,
        )
        self.wait = Histogram(
            APPROVAL_WAIT,
            "How long runs waited for a decision on their tool calls.",
            [AGENT_LABEL, "decision"],
            buckets=_WAIT_BUCKETS,
            registry=registry,
        )
        registry.register(self)

    def __len__(self) -> int:
        return len(self._runs)

    def room_for(self, caller: Caller) -> str | None:
        """Why ``caller`` cannot start one more wait, or None."""
        if len(self._runs) >= self.limits.max_pending:
            return f"{self.limits.max_pending} runs already wait for approval on this replica"
        owner = owner_of(caller)
        mine = sum(1 for o, _ in self._runs if o == owner)
        if mine >= self.limits.max_pending_per_caller:
            return f"this caller already has {mine} runs waiting for approval"
        return None

    def add(self, pending: Pending) -> None:
        reason = self.room_for(pending.caller)
        if reason is not None:
            raise ApprovalsFull(reason)
        self._runs[(pending.owner, pending.id)] = pending
        self._callers.add(pending.caller.name)

    def take(self, caller: Caller, approval_id: str) -> Pending | None:
        """The caller's own waiting run ``approval_id``, taken out (it is decided once)."""
        return self._runs.pop((owner_of(caller), approval_id), None)

    def take_task(self, caller: Caller, task_id: str) -> Pending | None:
        """The caller's own waiting run of A2A task ``task_id``, taken out."""
        owner = owner_of(caller)
        for (o, key), pending in list(self._runs.items()):
            if o == owner and pending.task_id == task_id:
                return self._runs.pop((o, key))
        return None

    def expired(self) -> list[Pending]:
        """Runs past their deadline, taken out."""
        now = self.clock()
        late = [k for k, p in self._runs.items() if p.deadline <= now]
        return [self._runs.pop(k) for k in late]

    def drain(self) -> list[Pending]:
        """Every waiting run, taken out (the agent stops)."""
        runs = list(self._runs.values())
        self._runs.clear()
        return runs

    def waited_s(self, pending: Pending) -> float:
        return max(0.0, self.clock() - pending.started)

    def count(self, verdict: Verdict, waited_s: float) -> None:
        self.decisions.labels(self.agent, verdict).inc()
        self.wait.labels(self.agent, verdict).observe(waited_s)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pending = GaugeMetricFamily(
            APPROVALS_PENDING,
            "Runs waiting for a person's approval now.",
            labels=[AGENT_LABEL, "caller"],
        )
        per_caller = dict.fromkeys(self._callers, 0)
        for run in self._runs.values():
            per_caller[run.caller.name] = per_caller.get(run.caller.name, 0) + 1
        for caller, n in sorted(per_caller.items()):
            pending.add_metric([self.agent, caller], n)
        yield pending
        oldest = GaugeMetricFamily(
            APPROVAL_OLDEST,
            "Seconds the oldest waiting run has waited (0: none waits).",
            labels=[AGENT_LABEL],
        )
        now = self.clock()
        ages = [now - r.started for r in self._runs.values()]
        oldest.add_metric([self.agent], max(ages, default=0.0))
        yield oldest


__all__ = [
    "APPROVALS_PENDING",
    "APPROVAL_DECISIONS",
    "APPROVAL_OLDEST",
    "APPROVAL_WAIT",
    "ApprovalsFull",
    "Continuation",
    "Counted",
    "Pending",
    "PendingApprovals",
]
