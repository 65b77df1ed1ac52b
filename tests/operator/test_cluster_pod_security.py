"""A model pod refused by admission, on the real control plane.

The namespace enforces the ``restricted`` Pod Security level
(``pod-security.kubernetes.io/enforce: restricted``), which every pod sleuth renders passes (the
model server included: tests/operator/test_cluster_render.py), and a ResourceQuota that allows no
GPU, which the vLLM pod of a served model exceeds. kube-controller-manager's ReplicaSet controller
really tries to create the pod, kube-apiserver's quota admission really refuses it, and the
Deployment controller copies the ReplicaSet's ``ReplicaFailure``/``FailedCreate`` condition onto
the Deployment. The AgentDeployment must say so — the reason, in its conditions and in an Event —
instead of a bare "0/1 replicas available".
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.operator.operator_testkit import OperatorProcess
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster

AGENT = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "psa"},
    "spec": {"model": {"name": "Qwen/Qwen2.5-7B-Instruct", "gpu": {"count": 1}}},
}


def _conditions(kube: Any, namespace: str) -> dict[str, dict[str, str]]:
    out = kube.kubectl("get", "agentdeployment/psa", "-n", namespace, "-o", "json", check=False)
    if out.returncode != 0:
        return {}
    status = json.loads(out.stdout).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def _warnings(kube: Any, namespace: str) -> list[dict[str, Any]]:
    items = json.loads(kube.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)
    return [
        e
        for e in items["items"]
        if e["involvedObject"]["name"] == "psa"
        and e["involvedObject"]["kind"] == "AgentDeployment"
        and e["type"] == "Warning"
    ]


def test_a_model_pod_refused_by_admission_is_reported_on_the_agentdeployment(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-gpu"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "0"}},
    }
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(quota))
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(AGENT))

    def refused() -> dict[str, dict[str, str]]:
        conds = _conditions(kube, namespace)
        degraded = conds.get("Degraded", {})
        return conds if degraded.get("reason") == "ReplicaFailure" else {}

    conds = eventually(refused, 120, "Degraded=True ReplicaFailure on the AgentDeployment")
    degraded, ready = conds["Degraded"], conds["Ready"]
    assert degraded["status"] == "True"
    # The apiserver's own words: which pod, which quota.
    assert "Deployment psa-model: 0/1 replicas available" in degraded["message"]
    assert "pods cannot be created: FailedCreate: " in degraded["message"]
    assert "exceeded quota: no-gpu" in degraded["message"]
    assert ready["status"] == "False"
    assert ready["reason"] == "ModelNotReady"
    assert "exceeded quota: no-gpu" in ready["message"]
    # The Deployment really carries the condition the operator read (not a stand-in).
    model = json.loads(
        kube.kubectl("get", "deployment/psa-model", "-n", namespace, "-o", "json").stdout
    )
    failure = next(c for c in model["status"]["conditions"] if c["type"] == "ReplicaFailure")
    assert failure["reason"] == "FailedCreate"
    # And kubectl describe / get events shows it as a Warning Event.
    events = eventually(
        lambda: [e for e in _warnings(kube, namespace) if e["reason"] == "ReplicaFailure"],
        60,
        "a Warning Event ReplicaFailure",
    )
    assert "exceeded quota" in events[0]["message"]
    assert events[0]["message"].startswith("Degraded=True: ")

    # The agent's pods are hardened to the restricted level: admitted, the Deployment has a pod.
    def agent_pods() -> int:
        out = kube.kubectl(
            "get", "deployment/psa-agent", "-n", namespace, "-o", "json", check=False
        )
        if out.returncode != 0:
            return 0
        status = json.loads(out.stdout).get("status") or {}
        assert not any(c["type"] == "ReplicaFailure" for c in status.get("conditions") or [])
        return int(status.get("replicas", 0))

    eventually(agent_pods, 120, "the agent's pod admitted under the restricted level")
