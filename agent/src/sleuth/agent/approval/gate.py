"""What the loop asks before a round of tool calls: run, wait for a person, or refuse.

One :class:`TurnGate` serves one leg of a run (from its start, or from a decision to the next
pause). :meth:`TurnGate.screen` sorts the calls of a model turn that the rules catch
(:class:`~sleuth.agent.approval.rules.ApprovalRules`):

- decided (the decisions the gate was given, by call id): approved calls run, the others are
  refused;
- the same call (tool and arguments) a person already refused in this run: refused again, without
  asking twice;
- the rest wait (the loop pauses) — unless the run cannot wait (``cannot_wait``: its caller holds
  no ``approve`` grant, or too many runs already wait): then they are refused at once, and the
  refusal is recorded in the trace like any decision.

Calls the rules do not catch always run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sleuth.agent.approval.decision import ID_PREFIX, refused_observation
from sleuth.agent.approval.rules import ApprovalRules, arguments_of
from sleuth.agent.toolrun import Conversation
from sleuth.agent.trace import ApprovalRecord, PendingCall, ToolCallRecord, Trace
from sleuth.core.llm import ModelTurn, ToolCallRequest


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_approval_id() -> str:
    return ID_PREFIX + uuid.uuid4().hex[:20]


@dataclass(frozen=True, slots=True)
class PausedTurn:
    """The model turn a run stopped before, and its calls that wait for a person."""

    turn: ModelTurn
    calls: tuple[PendingCall, ...]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call that is not run, and the decision that says why."""

    decision: ApprovalRecord

    def record(self, call: ToolCallRequest, conversation: Conversation) -> ToolCallRecord:
        now = conversation.ms()
        return ToolCallRecord(
            id=call.id,
            tool=call.name,
            arguments=arguments_of(call),
            status="not_approved",
            observation=refused_observation(call.name, self.decision),
            start_ms=now,
            end_ms=now,
        )


@dataclass(frozen=True, slots=True)
class Screen:
    waiting: tuple[PendingCall, ...] = ()
    refused: dict[str, Refusal] = field(default_factory=dict)


def _key(tool: str, arguments: Mapping[str, Any] | None) -> tuple[str, str]:
    return tool, json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


class TurnGate:
    """The approval decisions of one leg of a run."""

    def __init__(
        self,
        rules: ApprovalRules,
        decided: Mapping[str, ApprovalRecord] | None = None,
        cannot_wait: str | None = None,
        now: Callable[[], str] = utc_now,
    ) -> None:
        self.rules = rules
        self.decided = dict(decided or {})
        self.cannot_wait = cannot_wait
        self.now = now

    def screen(
        self, turn: ModelTurn, messages: Sequence[Mapping[str, Any]], trace: Trace
    ) -> Screen:
        needs = self.rules.check(turn.tool_calls, messages)
        if not needs:
            return Screen()
        earlier = {
            _key(c.tool, c.arguments): r
            for r in trace.approvals
            if r.decision != "approved"
            for c in r.calls
        }
        waiting: list[PendingCall] = []
        refused: dict[str, Refusal] = {}
        for call in turn.tool_calls:
            if call.id not in needs:
                continue
            decided = self.decided.get(call.id)
            arguments = arguments_of(call) or {}
            if decided is not None:
                if decided.decision != "approved":
                    refused[call.id] = Refusal(decided)
            elif (before := earlier.get(_key(call.name, arguments))) is not None:
                refused[call.id] = Refusal(before)
            else:
                waiting.append(
                    PendingCall(id=call.id, tool=call.name, arguments=arguments, why=needs[call.id])
                )
        if waiting and self.cannot_wait is not None:
            now = self.now()
            record = ApprovalRecord(
                id=new_approval_id(),
                calls=waiting,
                decision="refused",
                reason=self.cannot_wait,
                requested_at=now,
                decided_at=now,
                waited_ms=0.0,
            )
            trace.approvals.append(record)
            refused |= {c.id: Refusal(record) for c in waiting}
            waiting = []
        return Screen(tuple(waiting), refused)


__all__ = ["PausedTurn", "Refusal", "Screen", "TurnGate", "new_approval_id", "utc_now"]
