"""A Deployment whose ReplicaSet cannot create pods (``ReplicaFailure``/``FailedCreate``: a pod
refused by Pod Security admission, a quota, a webhook) is reported on its owner with the
apiserver's reason, not as a bare "0/1 available"."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.operator.loop.rollout import MAX_FAILURE_MESSAGE, REPLICA_FAILURE, rollout
from sleuth.operator.loop.watchcache import WatchCache
from sleuth.operator.status import Cond, progressing_condition, stuck_condition

pytestmark = pytest.mark.unit

REFUSED = (
    'pods "bot-model-5d8f7c9b4-x2x7q" is forbidden: violates PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (container "vllm" must set '
    "securityContext.allowPrivilegeEscalation=false)"
)


def _deployment(conditions: list[dict[str, Any]], version: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "bot-model",
            "namespace": "team-a",
            "uid": "d1",
            "generation": 1,
            "resourceVersion": str(version),
            "ownerReferences": [{"uid": "agent-uid"}],
            "labels": {"app.kubernetes.io/managed-by": "sleuth-operator"},
        },
        "spec": {"replicas": 1, "strategy": {"type": "RollingUpdate"}},
        "status": {
            "observedGeneration": 1,
            "replicas": 0,
            "updatedReplicas": 0,
            "availableReplicas": 0,
            "conditions": conditions,
        },
    }


FAILURE = {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": REFUSED}
PROGRESSING = {"type": "Progressing", "status": "True", "reason": "NewReplicaSetCreated"}


def test_the_refusal_is_read_into_the_rollout_and_its_message() -> None:
    found = rollout("bot-model", _deployment([PROGRESSING, FAILURE]))
    assert found.replica_failure == f"FailedCreate: {REFUSED}"
    assert found.describe() == (
        "Deployment bot-model: 0/1 replicas available, 0/1 updated; "
        f"pods cannot be created: FailedCreate: {REFUSED}"
    )
    # A condition that is not True, or none at all: nothing to report.
    cleared = {**FAILURE, "status": "False"}
    assert rollout("bot-model", _deployment([PROGRESSING, cleared])).replica_failure == ""
    assert rollout("bot-model", _deployment([PROGRESSING])).replica_failure == ""


def test_a_long_refusal_is_cut() -> None:
    long = {**FAILURE, "message": "x" * 5000}
    assert len(rollout("bot-model", _deployment([long])).replica_failure) == MAX_FAILURE_MESSAGE


def test_the_owner_is_degraded_with_reason_replica_failure_before_a_stalled_rollout() -> None:
    refused = rollout("bot-model", _deployment([PROGRESSING, FAILURE]))
    fine = rollout("bot-agent", None)
    progressing = progressing_condition([refused])
    stuck = stuck_condition([refused, fine], progressing)
    assert stuck == Cond("Degraded", "True", REPLICA_FAILURE, refused.describe())
    # Ten minutes later the Deployment controller also gives up on progress: the refusal is still
    # the reason worth reading.
    stalled = {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    both = rollout("bot-model", _deployment([stalled, FAILURE]))
    assert stuck_condition([both], progressing_condition([both])).reason == REPLICA_FAILURE  # type: ignore[union-attr]
    alone = rollout("bot-model", _deployment([stalled]))
    assert stuck_condition([alone], progressing_condition([alone])).reason == (  # type: ignore[union-attr]
        "ProgressDeadlineExceeded"
    )
    assert stuck_condition([fine], progressing_condition([fine])) is None


def test_the_condition_appearing_wakes_the_owner() -> None:
    """The watch cache wakes a Deployment's owner when what its rollout reads changes: a
    ReplicaFailure condition appearing (or going) is such a change."""
    cache = WatchCache()
    cache.seen_child(_deployment([PROGRESSING], 1))
    assert cache.seen_child(_deployment([PROGRESSING, FAILURE], 2)).owner
    assert not cache.seen_child(_deployment([PROGRESSING, FAILURE], 3)).owner
    assert cache.seen_child(_deployment([PROGRESSING], 4)).owner
