"""The words of approval: what a person sends to decide, what the model and the person are told.

A decision is text, so that every client can send it (a chat window, the OpenAI SDK, an A2A
client):

- over ``/v1/chat/completions`` and ``/v1/query``: a user message ``approve apr_<id>`` or
  ``reject apr_<id>: <reason>`` (:func:`parse_addressed`);
- in the paused A2A task: ``approve`` or ``reject: <reason>`` (the task says which calls), or a
  data part ``{"decision": "approve" | "reject", "reason": "..."}`` (:func:`parse_reply`).

A call that does not run because of a decision becomes the tool message the model reads next,
``{"error": "...", "tool": "..."}`` (:func:`refused_observation`), and the final answer ends with
a note that says which calls did not run and why (:func:`refusal_note`), whatever the model wrote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sleuth.agent.trace import ApprovalRecord, PendingCall, Trace, Verdict

Choice = Literal["approve", "reject"]
ID_PREFIX = "apr_"
_CHOICE = r"(?P<choice>approve|approved|reject|rejected)"
_REASON = r"(?:\s*[:,.\-]\s*|\s+)?(?P<reason>.*)"
_ADDRESSED = re.compile(
    rf"^\s*{_CHOICE}\s+(?P<id>{ID_PREFIX}[0-9a-f]{{8,64}})\b{_REASON}$", re.I | re.S
)
_REPLY = re.compile(rf"^\s*{_CHOICE}\b{_REASON}$", re.I | re.S)
MAX_REASON_CHARS = 500


@dataclass(frozen=True, slots=True)
class Reply:
    """A person's decision as sent: approve or reject, why, and (addressed) which approval."""

    choice: Choice
    reason: str = ""
    approval_id: str = ""


def _reply(match: re.Match[str]) -> Reply:
    choice: Choice = "approve" if match["choice"].lower().startswith("approve") else "reject"
    reason = " ".join(match["reason"].split())[:MAX_REASON_CHARS]
    return Reply(choice, reason, match.groupdict().get("id") or "")


def parse_addressed(text: str) -> Reply | None:
    """``approve apr_<id>`` / ``reject apr_<id>: reason`` (the OpenAI API and /v1/query)."""
    match = _ADDRESSED.match(text)
    return _reply(match) if match else None


def parse_reply(text: str, data: Sequence[Mapping[str, Any]] = ()) -> Reply | None:
    """``approve`` / ``reject: reason`` as text, or a data part with ``decision`` (A2A)."""
    for part in data:
        choice = part.get("decision")
        if choice in ("approve", "reject"):
            reason = part.get("reason")
            return Reply(choice, str(reason)[:MAX_REASON_CHARS] if reason else "")
    match = _REPLY.match(text)
    return _reply(match) if match else None


def describe_calls(calls: Sequence[PendingCall]) -> str:
    return "; ".join(
        f"{c.tool} {json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)} ({c.why})"
        for c in calls
    )


def pending_text(approval_id: str, calls: Sequence[PendingCall], expires_at: str, a2a: bool) -> str:
    """What the person reads while the run waits: the calls, and how to decide."""
    head = f"Approval needed before the agent acts: {describe_calls(calls)}. "
    if a2a:
        how = "Reply in this task with 'approve' or 'reject: <reason>'"
    else:
        how = (
            f"Send 'approve {approval_id}' or 'reject {approval_id}: <reason>' as the next message"
        )
    return f"{head}{how} before {expires_at}; otherwise the call is not run."


def not_pending_text(approval_id: str, late_answer: str | None) -> str:
    """The answer to a decision on an approval that does not wait (any more) for this caller."""
    if late_answer is not None:
        return (
            f"Approval {approval_id} expired before your decision; the call was not run, and the "
            f"agent answered without it:\n\n{late_answer}"
        )
    return (
        f"No approval {approval_id} waits for you: it was decided already, it expired, or the "
        "agent restarted (waiting runs live in its memory). Nothing was run. Ask the question "
        "again."
    )


def _why(record: ApprovalRecord) -> str:
    if record.decision == "rejected":
        said = f": {record.reason}" if record.reason else ""
        return f"rejected by {record.by}{said}"
    if record.decision == "expired":
        return f"nobody approved it in time ({record.reason})"
    return f"nobody could approve it ({record.reason})"


def refused_observation(tool: str, record: ApprovalRecord) -> str:
    """The tool message of a call that was not run: an ordinary error observation."""
    message = (
        f"this call was not run: {_why(record)}. Do not call it again; answer with what you "
        "have and say that this call was refused"
    )
    return json.dumps({"error": message, "tool": tool}, ensure_ascii=False)


def refusal_note(trace: Trace) -> str:
    """The sentence the answer ends with when calls did not run for want of approval."""
    refused = [r for r in trace.approvals if r.decision != "approved"]
    if not refused:
        return ""
    parts = [f"{', '.join(sorted({c.tool for c in r.calls}))} ({_why(r)})" for r in refused]
    return "Not run, for want of approval: " + "; ".join(parts) + "."


__all__ = [
    "ID_PREFIX",
    "Choice",
    "Reply",
    "Verdict",
    "describe_calls",
    "not_pending_text",
    "parse_addressed",
    "parse_reply",
    "pending_text",
    "refusal_note",
    "refused_observation",
]
