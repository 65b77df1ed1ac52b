"""How a waiting A2A task ends when nobody decides in time: it completes on its own.

The run goes on without the calls (the model is told they were refused, and the answer says
so); the task, still ``input-required`` in the store, becomes ``completed`` with the ``answer``
artifact — or stays ``input-required`` with the new pending calls, when the run paused again.
A client polling ``GetTask`` sees it; a message sent to the completed task is refused.
"""

from __future__ import annotations

import uuid

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Role, Task, TaskState, TaskStatus

from sleuth.agent.a2a_parts import ANSWER_ARTIFACT, answer_artifact, approval_data
from sleuth.agent.access.tasks import BoundedTaskStore
from sleuth.agent.approval.pending import Continuation, Pending
from sleuth.agent.approval.runs import ApprovalRuns
from sleuth.agent.loop import AgentResult
from sleuth.agent.trace import ApprovalRecord


def _ended(task: Task, result: AgentResult) -> bool:
    """``task`` as ``result`` leaves it; False when it no longer waits (nothing to change)."""
    if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
        return False
    if result.approval is not None:  # it paused again, before other calls
        message = Message(
            role=Role.ROLE_AGENT,
            message_id=uuid.uuid4().hex,
            task_id=task.id,
            context_id=task.context_id,
            parts=[new_text_part(result.answer), new_data_part(approval_data(result.approval))],
        )
        state = TaskState.TASK_STATE_INPUT_REQUIRED
        task.status.CopyFrom(TaskStatus(state=state, message=message))
        return True
    kept = [a for a in task.artifacts if a.artifact_id != ANSWER_ARTIFACT]
    del task.artifacts[:]
    task.artifacts.extend([*kept, answer_artifact(result, {})])
    task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_COMPLETED))
    return True


def task_completer(runs: ApprovalRuns, store: BoundedTaskStore) -> Continuation:
    """The continuation of a waiting A2A task whose approval expired."""

    async def complete(pending: Pending, record: ApprovalRecord) -> None:
        result = await runs.resume(pending, record, "a2a", sample=False)
        await store.update(pending.owner, pending.task_id or "", lambda t: _ended(t, result))

    return complete


__all__ = ["task_completer"]
