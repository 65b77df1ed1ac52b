"""Refused children: the conditions they give the owner, the scheduler's reason, what a
workload depends on (pure parts; the apiserver's side is in test_cluster_refusals.py)."""

from __future__ import annotations

import dataclasses

import pytest

from sleuth.operator.children import Refusal, mounted_config_maps, rejected_conditions
from sleuth.operator.loop.rollout import rollout
from sleuth.operator.status import Cond, unschedulable

pytestmark = pytest.mark.unit

HEALTHY = [
    Cond("Ready", "True", "Ready", "ok"),
    Cond("Progressing", "False", "Complete", "no rollout"),
    Cond("Degraded", "False", "AsExpected", "fine"),
]


def test_a_refusal_turns_ready_false_and_degraded_naming_the_child() -> None:
    refused = [Refusal("ConfigMap", "t-tool", "Too long: may not be more than 1048576 bytes")]
    ready, progressing, degraded = rejected_conditions(refused, HEALTHY)
    assert (ready.status, ready.reason) == ("False", "ChildRejected")
    assert ready.message == (
        "the apiserver refused ConfigMap t-tool: Too long: may not be more than 1048576 bytes"
    )
    assert (degraded.status, degraded.reason) == ("True", "ChildRejected")
    assert progressing == HEALTHY[1]
    assert rejected_conditions([], HEALTHY) == HEALTHY


def test_a_workload_depends_on_themounted_config_maps_it_mounts() -> None:
    deployment = {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "volumes": [
                        {"name": "config", "configMap": {"name": "a-agent"}},
                        {"name": "tmp", "emptyDir": {}},
                    ]
                }
            }
        },
    }
    assert mounted_config_maps(deployment) == {"a-agent"}
    assert mounted_config_maps({"kind": "Service", "spec": {"ports": []}}) == set()


def _pod(name: str, created: str, scheduled: str, message: str = "") -> dict[str, object]:
    cond = {
        "type": "PodScheduled",
        "status": scheduled,
        "reason": "Unschedulable",
        "message": message,
    }
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "status": {"conditions": [cond]},
    }


def test_the_schedulers_reason_of_the_newest_pending_pod() -> None:
    message = (
        "0/6 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
        "4 Insufficient nvidia.com/gpu. preemption: 0/6 nodes are available: 6 No preemption "
        "victims found for incoming pod."
    )
    pods = [
        _pod("m-1", "2026-01-01T00:00:00Z", "True"),
        _pod("m-2", "2026-01-01T00:00:01Z", "False", message),
    ]
    assert unschedulable(pods) == (
        "pod m-2 cannot be scheduled: 0/6 nodes are available: 2 node(s) didn't match Pod's "
        "node affinity/selector, 4 Insufficient nvidia.com/gpu"
    )
    assert unschedulable(pods[:1]) == ""
    found = rollout(
        "m",
        {
            "metadata": {"generation": 1},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "availableReplicas": 1, "updatedReplicas": 2},
        },
    )
    text = dataclasses.replace(found, unschedulable=unschedulable(pods)).describe()
    assert text.startswith("Deployment m: 1/2 replicas available, 2/2 updated; pod m-2 cannot")
