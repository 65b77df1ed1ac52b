"""How a Deployment's rollout reads, the way Kubernetes reads it: serving, complete, stalled.

The watch cache (:mod:`sleuth.operator.loop.watchcache`) keeps the part of each Deployment this is
read from and wakes a Deployment's owner only when what it reads here changed; the reconcilers'
conditions (:mod:`sleuth.operator.status`) are written from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Rollout:
    """What a Deployment's status says about its pods and its rollout.

    Two questions, answered the way Kubernetes answers them: is it *serving* (:attr:`ready`: at
    least :attr:`minimum` replicas available, of any revision, as the Deployment's own
    ``Available`` condition counts them, but never fewer than one), and is its rollout
    *complete* (:attr:`complete`: the test ``kubectl rollout status`` makes). A rollout that
    keeps enough old replicas available is ready and progressing at once.
    """

    name: str
    exists: bool
    desired: int
    available: int
    updated: int
    current_generation: bool
    total: int = 0  # status.replicas: the pods of every revision
    max_unavailable: int = 0  # the strategy's maxUnavailable, resolved against ``desired``
    stalled: bool = False  # the Deployment's Progressing condition says ProgressDeadlineExceeded
    unschedulable: str = ""  # the scheduler's reason a pod of it cannot be placed, if any
    # Why its ReplicaSet cannot create pods (the Deployment's ReplicaFailure condition, which the
    # Deployment controller copies from the ReplicaSet: FailedCreate, e.g. a pod refused by Pod
    # Security admission, a quota, a webhook); empty when it can.
    replica_failure: str = ""

    @property
    def minimum(self) -> int:
        """Available replicas it needs to serve: ``desired - maxUnavailable``, at least one."""
        if self.desired <= 0:
            return 0
        return max(1, self.desired - self.max_unavailable)

    @property
    def ready(self) -> bool:
        return self.exists and self.available >= self.minimum

    @property
    def complete(self) -> bool:
        """The latest spec is observed, every replica updated and available, no old pod left."""
        return (
            self.exists
            and self.current_generation
            and self.updated >= self.desired
            and self.total <= self.updated
            and self.available >= self.updated
        )

    @property
    def progressing(self) -> bool:
        return self.exists and not self.complete

    def describe(self) -> str:
        if not self.exists:
            return f"Deployment {self.name} does not exist yet"
        if not self.current_generation:
            return f"Deployment {self.name}: rollout of the latest spec not yet observed"
        text = (
            f"Deployment {self.name}: {self.available}/{self.desired} replicas available, "
            f"{self.updated}/{self.desired} updated"
        )
        old = self.total - self.updated
        if old > 0 and self.updated >= self.desired:
            text += f", {old} old pending termination"
        if self.replica_failure:
            text += f"; pods cannot be created: {self.replica_failure}"
        if self.stalled:
            text += "; progress deadline exceeded"
        return f"{text}; {self.unschedulable}" if self.unschedulable else text


def rollout(name: str, deployment: dict[str, Any] | None) -> Rollout:
    """Read a Deployment object (None when absent) into a :class:`Rollout`."""
    if deployment is None:
        return Rollout(name, False, 0, 0, 0, False)
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    desired = int(spec.get("replicas", 1))
    generation = deployment.get("metadata", {}).get("generation", 0)
    stalled = any(
        c.get("type") == "Progressing" and c.get("reason") == PROGRESS_DEADLINE_EXCEEDED
        for c in status.get("conditions") or []
    )
    failure = next(
        (
            c
            for c in status.get("conditions") or []
            if c.get("type") == REPLICA_FAILURE and c.get("status") == "True"
        ),
        None,
    )
    return Rollout(
        name=name,
        exists=True,
        desired=desired,
        available=int(status.get("availableReplicas", 0)),
        updated=int(status.get("updatedReplicas", 0)),
        current_generation=int(status.get("observedGeneration", 0)) >= int(generation),
        total=int(status.get("replicas", 0)),
        max_unavailable=max_unavailable(spec.get("strategy"), desired),
        stalled=stalled,
        replica_failure=_failure_text(failure),
    )


def _failure_text(condition: dict[str, Any] | None) -> str:
    """``<reason>: <message>`` of a ReplicaFailure condition, at most
    :data:`MAX_FAILURE_MESSAGE` characters; empty for none."""
    if condition is None:
        return ""
    reason = str(condition.get("reason") or "ReplicaFailure")
    message = str(condition.get("message") or "no message given")
    return f"{reason}: {message}"[:MAX_FAILURE_MESSAGE]


PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
REPLICA_FAILURE = "ReplicaFailure"  # a Deployment condition type, and the reason sleuth reports
MAX_FAILURE_MESSAGE = 512
DEFAULT_ROLLING = "25%"  # the apiserver's default maxSurge and maxUnavailable


def max_unavailable(strategy: dict[str, Any] | None, desired: int) -> int:
    """How many of ``desired`` replicas a rollout may take down, as the Deployment controller
    resolves it: ``Recreate`` all of them; ``RollingUpdate`` its ``maxUnavailable`` (an integer,
    or a percentage rounded down), one when both it and ``maxSurge`` (rounded up) come to zero.
    The apiserver's defaults (RollingUpdate, 25%/25%) when the strategy is not given."""
    strategy = strategy or {}
    if strategy.get("type") == "Recreate":
        return desired
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", DEFAULT_ROLLING), desired, round_up=True)
    unavailable = _scaled(rolling.get("maxUnavailable", DEFAULT_ROLLING), desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return min(unavailable, desired)


def _scaled(value: int | str, total: int, *, round_up: bool) -> int:
    """An IntOrString of a rolling update: an integer, or a percentage of ``total``."""
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not text.endswith("%"):
        return int(text)
    percent = int(text[:-1])
    whole, rest = divmod(percent * total, 100)
    return whole + (1 if round_up and rest else 0)


__all__ = [
    "DEFAULT_ROLLING",
    "PROGRESS_DEADLINE_EXCEEDED",
    "REPLICA_FAILURE",
    "Rollout",
    "max_unavailable",
    "rollout",
]
