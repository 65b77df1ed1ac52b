"""Status logic, pure: readiness of children, conditions, and what changed.

Conditions follow metav1.Condition: ``lastTransitionTime`` moves only when ``status`` flips, and
``Ready`` is the one summary condition. Reasons are CamelCase and stable (see docs/operator.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sleuth.operator.loop.rollout import PROGRESS_DEADLINE_EXCEEDED, REPLICA_FAILURE, Rollout

Status = Literal["True", "False", "Unknown"]
CONDITION_ORDER = ("Ready", "Progressing", "Degraded", "JudgeIndependent", "ModelScaledToZero")


@dataclass(frozen=True)
class Cond:
    """A desired condition, before timestamps are settled."""

    type: str
    status: Status
    reason: str
    message: str = ""


def progressing_condition(rollouts: list[Rollout]) -> Cond:
    """``Progressing`` of a resource whose Deployments are ``rollouts``: ``RollingOut`` while one
    is not complete, ``ProgressDeadlineExceeded`` (False) once its Deployment gave up waiting,
    ``Complete`` (False) when every one is."""
    moving = [r for r in rollouts if r.progressing]
    stalled = [r for r in moving if r.stalled]
    if stalled:
        message = "; ".join(r.describe() for r in stalled)
        return Cond("Progressing", "False", PROGRESS_DEADLINE_EXCEEDED, message)
    if moving:
        return Cond("Progressing", "True", "RollingOut", "; ".join(r.describe() for r in moving))
    return Cond("Progressing", "False", "Complete", "no rollout in progress")


def stuck_condition(rollouts: list[Rollout], progressing: Cond) -> Cond | None:
    """``Degraded=True`` of a resource whose pods cannot come: ``ReplicaFailure`` while a
    Deployment's ReplicaSet cannot create its pods (the message has the apiserver's refusal,
    e.g. a Pod Security violation), else ``ProgressDeadlineExceeded`` once a rollout gave up
    (``progressing`` says so); None when neither."""
    refused = [r for r in rollouts if r.replica_failure]
    if refused:
        return Cond("Degraded", "True", REPLICA_FAILURE, "; ".join(r.describe() for r in refused))
    if progressing.reason == PROGRESS_DEADLINE_EXCEEDED:
        return Cond("Degraded", "True", progressing.reason, progressing.message)
    return None


MAX_SCHEDULER_MESSAGE = 512


def unschedulable(pods: list[dict[str, Any]]) -> str:
    """Why the scheduler cannot place these pods (their ``PodScheduled=False`` condition), e.g.
    ``pod x-model-7d9f cannot be scheduled: 0/6 nodes are available: 2 Insufficient
    nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector``; empty when every pod
    is placed. The newest such pod speaks for all."""
    waiting = []
    for pod in pods:
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                waiting.append((pod.get("metadata", {}).get("creationTimestamp", ""), pod, cond))
    if not waiting:
        return ""
    _, pod, cond = max(waiting, key=lambda w: (w[0], w[1]["metadata"].get("name", "")))
    reason = str(cond.get("message") or cond.get("reason") or "no reason given")
    reason = reason.split(" preemption:")[0].rstrip(".")[:MAX_SCHEDULER_MESSAGE]
    return f"pod {pod['metadata'].get('name', '')} cannot be scheduled: {reason}"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def settle(
    current: list[dict[str, Any]] | None,
    desired: list[Cond],
    generation: int,
    now: str,
) -> list[dict[str, Any]]:
    """Conditions to write: ``lastTransitionTime`` kept unless the status flipped."""
    previous = {c.get("type"): c for c in current or []}
    out = []
    for cond in sorted(desired, key=lambda c: CONDITION_ORDER.index(c.type)):
        before = previous.get(cond.type)
        kept = None if before is None else before.get("lastTransitionTime")
        flipped = before is None or before.get("status") != cond.status or kept is None
        out.append(
            {
                "type": cond.type,
                "status": cond.status,
                "reason": cond.reason,
                "message": cond.message,
                "observedGeneration": generation,
                "lastTransitionTime": now if flipped else kept,
            }
        )
    return out


EVENT_CONDITIONS = ("Ready", "Degraded", "JudgeIndependent")
# Advisory conditions: a first value that is not healthy is news even on a healthy resource.
ADVISORY_CONDITIONS = ("JudgeIndependent",)


def healthy(cond: dict[str, Any]) -> bool:
    """Ready=True (JudgeIndependent=True), or Degraded=False."""
    return bool((cond["type"] == "Degraded") == (cond["status"] == "False"))


def newsworthy(
    current: list[dict[str, Any]] | None, settled: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The conditions whose change deserves an Event: a change of ``Ready``'s or ``Degraded``'s
    status or reason, and the first values of a resource that starts out degraded (anything but
    ``Degraded=False``: an invalid spec, a refused child, a missing Secret) that are not healthy,
    and the first unhealthy value of an advisory condition (``JudgeIndependent=False``).

    ``Progressing`` posts none (a rollout is in that condition and in its Deployments' own
    Events; a stuck one turns Degraded), and a new resource that is only waiting for its pods
    (``Ready=False``, ``Degraded=False``) posts nothing until it turns Ready: each Event is a
    write, and those were most of them when 1,000 agents were created at once."""
    previous = {c.get("type"): c for c in current or []}
    degraded = next((c for c in settled if c["type"] == "Degraded"), None)
    starts_degraded = degraded is not None and degraded["status"] != "False"
    changed = []
    for cond in settled:
        if cond["type"] not in EVENT_CONDITIONS:
            continue
        before = previous.get(cond["type"])
        if before is None:
            first_news = starts_degraded or cond["type"] in ADVISORY_CONDITIONS
            if first_news and not healthy(cond):
                changed.append(cond)
        elif (before.get("status"), before.get("reason")) != (cond["status"], cond["reason"]):
            changed.append(cond)
    return changed


def status_patch(
    current: dict[str, Any] | None, desired: dict[str, Any], managed: tuple[str, ...]
) -> dict[str, Any] | None:
    """The merge patch turning ``current`` status into ``desired``, or None when equal.

    Keys of ``managed`` absent from ``desired`` are removed (set to None in the patch).
    """
    current = current or {}
    patch: dict[str, Any] = {}
    for key in managed:
        want = desired.get(key)
        if current.get(key) != want:
            patch[key] = want
    return patch or None


def invalid_conditions(field_message: str) -> list[Cond]:
    """Conditions of a resource whose spec does not validate."""
    return [
        Cond("Ready", "False", "InvalidSpec", field_message),
        Cond("Progressing", "False", "InvalidSpec", "waiting for a valid spec"),
        Cond("Degraded", "True", "InvalidSpec", field_message),
    ]


__all__ = [
    "EVENT_CONDITIONS",
    "Cond",
    "healthy",
    "invalid_conditions",
    "newsworthy",
    "now_rfc3339",
    "progressing_condition",
    "settle",
    "status_patch",
    "stuck_condition",
    "unschedulable",
]
