"""Status logic, pure: readiness of children, conditions, and what changed.

Conditions follow metav1.Condition: ``lastTransitionTime`` moves only when ``status`` flips, and
``Ready`` is the one summary condition. Reasons are CamelCase and stable (see docs/operator.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Status = Literal["True", "False", "Unknown"]
CONDITION_ORDER = ("Ready", "Progressing", "Degraded")


@dataclass(frozen=True)
class Cond:
    """A desired condition, before timestamps are settled."""

    type: str
    status: Status
    reason: str
    message: str = ""


@dataclass(frozen=True)
class Rollout:
    """What a Deployment's status says about its rollout."""

    name: str
    exists: bool
    desired: int
    available: int
    updated: int
    current_generation: bool
    unschedulable: str = ""  # the scheduler's reason a pod of it cannot be placed, if any

    @property
    def ready(self) -> bool:
        if not self.exists:
            return False
        return (
            self.current_generation
            and self.updated >= self.desired
            and (self.available >= self.desired)
        )

    @property
    def progressing(self) -> bool:
        return self.exists and not self.ready

    def describe(self) -> str:
        if not self.exists:
            return f"Deployment {self.name} does not exist yet"
        if not self.current_generation:
            return f"Deployment {self.name}: rollout of the latest spec not yet observed"
        text = (
            f"Deployment {self.name}: {self.available}/{self.desired} replicas available, "
            f"{self.updated}/{self.desired} updated"
        )
        return f"{text}; {self.unschedulable}" if self.unschedulable else text


def rollout(name: str, deployment: dict[str, Any] | None) -> Rollout:
    """Read a Deployment object (None when absent) into a :class:`Rollout`."""
    if deployment is None:
        return Rollout(name, False, 0, 0, 0, False)
    spec = deployment.get("spec", {})
    status = deployment.get("status", {})
    desired = int(spec.get("replicas", 1))
    generation = deployment.get("metadata", {}).get("generation", 0)
    return Rollout(
        name=name,
        exists=True,
        desired=desired,
        available=int(status.get("availableReplicas", 0)),
        updated=int(status.get("updatedReplicas", 0)),
        current_generation=int(status.get("observedGeneration", 0)) >= int(generation),
    )


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


def transitions(
    current: list[dict[str, Any]] | None, settled: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Conditions whose status or reason changed: each one deserves an Event."""
    previous = {c.get("type"): c for c in current or []}
    changed = []
    for cond in settled:
        before = previous.get(cond["type"])
        if before is None or (before.get("status"), before.get("reason")) != (
            cond["status"],
            cond["reason"],
        ):
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
    "Cond",
    "Rollout",
    "invalid_conditions",
    "now_rfc3339",
    "rollout",
    "settle",
    "status_patch",
    "transitions",
    "unschedulable",
]
