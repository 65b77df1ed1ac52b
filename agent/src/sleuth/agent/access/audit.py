"""The audit trail: one JSON line per request on the agent's standard output.

Log pipelines collect a container's output; an auditor reads who asked what, and what the agent
did to answer. Every request to an endpoint that needs a caller leaves a record, refused ones
included::

    {"audit": "sleuth.agent/v1", "time": "2026-12-06T03:40:12.345Z", "agent": "contracts",
     "caller": "dashboard", "proof": "api_key", "subject": "key-2026-12", "endpoint": "query",
     "outcome": "answered", "question": "How many ...?",          # or "questionSha256": "<hex>"
     "toolCalls": [{"tool": "sql_query", "arguments": {"query": "SELECT ...", "params": [2025]},
                    "status": "ok", "rows": 47}],
     "stopReason": "answered", "iterations": 1, "promptTokens": 812, "completionTokens": 64,
     "ms": 812.3, "traceId": "<32 hex>"}

``outcome``: ``answered`` (the loop ran; ``stopReason`` says how it ended), ``unauthenticated``
(401: no caller; ``caller`` is null), ``overloaded`` (429), ``cancelled`` (the client left),
``invalid`` (refused by the request limits). ``subject`` is the key's id (its file name in the
Secret) or the token's ``sub``. Tool calls carry their arguments as the model sent them — the
SQL text and its parameters, the search query — and how many ``rows`` (sql_query) or ``results``
(vector_search, web_search) came back, never the rows themselves.

Calls that wait for a person (:mod:`sleuth.agent.approval`) leave one record when the run
pauses and one per decision, under the caller who started the run::

    {"audit": "sleuth.agent/v1", ..., "caller": "portal", "endpoint": "a2a",
     "outcome": "approval_requested",          # or approval_approved, approval_rejected,
     "approval": {"id": "<task id or apr_...>", # approval_expired, approval_refused
                  "calls": [{"tool": "web_search", "arguments": {"query": "..."},
                             "why": "its arguments carry '47', ..."}],
                  "by": "portal", "bySubject": "key-1", "reason": "...", "waitedMs": 5123.4}}

Never in a record: a credential (the ``Authorization`` header is read by
:mod:`sleuth.agent.access.identity` only), a key, a token.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sleuth.agent.access.caller import Caller
from sleuth.agent.trace import ApprovalRecord, PendingCall, ToolCallRecord, Trace
from sleuth.core.api.access_config import QuestionAudit

SCHEMA = "sleuth.agent/v1"


def _stdout(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _returned(call: ToolCallRecord) -> dict[str, int]:
    """How much a call brought back: ``rows`` or ``results``, when its output says."""
    if call.status not in ("ok", "cached"):
        return {}
    try:
        output = json.loads(call.observation)
    except ValueError:
        return {}
    if isinstance(output, list):  # a list of results (a custom tool's output)
        return {"results": len(output)}
    if not isinstance(output, dict):
        return {}
    if isinstance(output.get("row_count"), int):
        return {"rows": output["row_count"]}
    if isinstance(output.get("results"), list):
        return {"results": len(output["results"])}
    return {}


class AuditLog:
    """Writes audit records (``sink``: one line each; default: standard output)."""

    def __init__(
        self,
        agent: str,
        question: QuestionAudit = "full",
        sink: Callable[[str], None] | None = None,
    ) -> None:
        self.agent = agent
        self.question = question
        self.sink = sink or _stdout

    def _base(self, caller: Caller | None, endpoint: str, outcome: str) -> dict[str, Any]:
        return {
            "audit": SCHEMA,
            "time": _now(),
            "agent": self.agent,
            "caller": caller.name if caller else None,
            "proof": caller.proof if caller else None,
            "subject": caller.subject if caller else None,
            "endpoint": endpoint,
            "outcome": outcome,
        }

    def _question(self, record: dict[str, Any], question: str) -> None:
        if self.question == "digest":
            record["questionSha256"] = hashlib.sha256(question.encode()).hexdigest()
        else:
            record["question"] = question

    def refused(
        self, caller: Caller | None, endpoint: str, outcome: str, question: str | None = None
    ) -> None:
        """A request that did not run the loop (401, 429, a refused body)."""
        record = self._base(caller, endpoint, outcome)
        if question is not None:
            self._question(record, question)
        self._write(record)

    def answered(
        self,
        caller: Caller,
        endpoint: str,
        question: str,
        trace: Trace,
        trace_id: str | None,
        outcome: str = "answered",
    ) -> None:
        """A request that ran the loop (``outcome`` ``cancelled`` when the client left)."""
        record = self._base(caller, endpoint, outcome)
        self._question(record, question)
        record["toolCalls"] = [
            {"tool": c.tool, "arguments": c.arguments, "status": c.status, **_returned(c)}
            for c in trace.tool_calls()
        ]
        record |= {
            "stopReason": trace.stop_reason,
            "iterations": trace.iterations,
            "promptTokens": trace.prompt_tokens,
            "completionTokens": trace.completion_tokens,
            "ms": round(trace.total_ms, 1),
            "traceId": trace_id,
        }
        self._write(record)

    def approval(
        self,
        caller: Caller,
        endpoint: str,
        approval_id: str,
        calls: list[PendingCall],
        decision: ApprovalRecord | None = None,
    ) -> None:
        """A run paused before ``calls`` (``decision`` None), or a decision on them."""
        outcome = "approval_requested" if decision is None else f"approval_{decision.decision}"
        record = self._base(caller, endpoint, outcome)
        entry: dict[str, Any] = {
            "id": approval_id,
            "calls": [{"tool": c.tool, "arguments": c.arguments, "why": c.why} for c in calls],
        }
        if decision is not None:
            entry |= {
                "by": decision.by,
                "bySubject": decision.subject,
                "reason": decision.reason,
                "waitedMs": round(decision.waited_ms, 1),
            }
        record["approval"] = entry
        self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        self.sink(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str))


__all__ = ["SCHEMA", "AuditLog"]
