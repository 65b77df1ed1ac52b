"""What the agent's A2A tasks carry: the answer artifact, and the data of a task that waits."""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Artifact

from sleuth.agent.approval.pending import Pending
from sleuth.agent.loop import AgentResult

ANSWER_ARTIFACT = "answer"


def answer_artifact(result: AgentResult, extra: dict[str, str]) -> Artifact:
    """The ``answer`` artifact whole: its text, and a data part with the citations (and
    ``extra``, the trace id of a traced task)."""
    return Artifact(
        artifact_id=ANSWER_ARTIFACT,
        name=ANSWER_ARTIFACT,
        parts=[
            new_text_part(result.answer),
            new_data_part({"citations": result.citations, **extra}),
        ],
    )


def approval_data(pending: Pending) -> dict[str, Any]:
    """The data part of a task that waits for a decision: which calls, why, until when."""
    return {"approval": pending.as_json()}


__all__ = ["ANSWER_ARTIFACT", "answer_artifact", "approval_data"]
