"""Rollouts in the real control plane: Ready stays True while a rollout keeps enough replicas
available (Progressing says it is under way), and the agent rolls once on creation.

kwok marks pods Ready; kube-controller-manager runs the real Deployment controller, so the
Deployment statuses the operator reads are the real ones.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.operator.operator_testkit import OperatorProcess
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster

AGENT = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "roll"},
    "spec": {
        "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"},
        "agent": {"replicas": 2},
    },
}
# More CPU than any node offers: a pod of the new revision stays Pending, the rollout is stuck
# with the two old replicas serving.
UNPLACEABLE = {"requests": {"cpu": "500"}, "limits": {"cpu": "500"}}


def _get(kube: Any, namespace: str, what: str) -> dict[str, Any]:
    out = kube.kubectl("get", what, "-n", namespace, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _conditions(kube: Any, namespace: str, what: str) -> dict[str, tuple[str, str, str]]:
    status = _get(kube, namespace, what).get("status") or {}
    return {
        c["type"]: (c["status"], c["reason"], c.get("message", ""))
        for c in status.get("conditions") or []
    }


def _ready_events(kube: Any, namespace: str, name: str) -> list[str]:
    items = json.loads(kube.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)
    return sorted(
        f"{e['metadata']['name']} {e['message']}"
        for e in items["items"]
        if e["involvedObject"]["name"] == name and e["message"].startswith("Ready=")
    )


def _patch_agent(kube: Any, namespace: str, agent: dict[str, Any]) -> None:
    patch = json.dumps({"spec": {"agent": agent}})
    kube.kubectl("patch", "agentdeployment", "roll", "-n", namespace, "--type=merge", "-p", patch)


def _settled(kube: Any, namespace: str) -> bool:
    obj = _get(kube, namespace, "agentdeployment/roll")
    conds = _conditions(kube, namespace, "agentdeployment/roll")
    observed = (obj.get("status") or {}).get("observedGeneration")
    return (
        observed == obj["metadata"]["generation"]
        and conds.get("Ready", ("",))[0] == "True"
        and conds.get("Progressing", ("", ""))[:2] == ("False", "Complete")
    )


def test_ready_stays_true_while_a_rollout_keeps_two_replicas_serving(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(AGENT))
    eventually(lambda: _settled(kube, namespace), 120, "Ready and the first rollout complete")
    flips = eventually(
        lambda: (e := _ready_events(kube, namespace, "roll")) and "Ready=True" in str(e) and e,
        30,
        "the Ready=True event",
    )

    # A new revision whose pod cannot be placed: the rollout is stuck with 2/2 old replicas.
    _patch_agent(kube, namespace, {"resources": UNPLACEABLE})

    def rolling_out() -> dict[str, tuple[str, str, str]]:
        conds = _conditions(kube, namespace, "agentdeployment/roll")
        moving = conds.get("Progressing", ("", "", ""))
        assert moving[:2] == ("True", "RollingOut"), conds
        assert "cannot be scheduled" in moving[2], conds  # the scheduler's reason
        return conds

    conds = eventually(rolling_out, 120, "Progressing=True RollingOut naming the Pending pod")
    assert conds["Ready"][:2] == ("True", "Ready"), conds
    assert "Deployment roll-agent: 2/2 replicas available" in conds["Progressing"][2]

    # Fixed: the rollout completes; Ready never flipped on the way.
    _patch_agent(kube, namespace, {"resources": None, "systemPrompt": "Answer briefly."})
    eventually(lambda: _settled(kube, namespace), 120, "the fixed rollout complete")
    assert _conditions(kube, namespace, "agentdeployment/roll")["Ready"][:2] == ("True", "Ready")
    assert _ready_events(kube, namespace, "roll") == flips, "Ready flipped during the rollout"


def _agent_replicasets(kube: Any, namespace: str) -> list[str]:
    items = json.loads(kube.kubectl("get", "replicasets", "-n", namespace, "-o", "json").stdout)[
        "items"
    ]
    return sorted(
        rs["metadata"]["name"]
        for rs in items
        if any(
            ref.get("kind") == "Deployment" and ref.get("name") == "contracts-agent"
            for ref in rs["metadata"].get("ownerReferences") or []
        )
    )


def test_the_agent_rolls_once_on_creation(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    """The README's apply creates the AgentDeployment, then its three ToolBindings a moment
    later: the agent Deployment gets one ReplicaSet, whose pods already know all three tools."""
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))

    def settled() -> bool:
        conds = _conditions(kube, namespace, "agentdeployment/contracts")
        status = _get(kube, namespace, "agentdeployment/contracts").get("status") or {}
        tools = status.get("tools") or []
        return (
            conds.get("Ready", ("",))[0] == "True"
            and conds.get("Progressing", ("", ""))[:2] == ("False", "Complete")
            and len(tools) == 3
            and all(t["ready"] for t in tools)
        )

    eventually(settled, 180, "the agent Ready, its rollout complete, three tools ready")
    replicasets = _agent_replicasets(kube, namespace)
    assert len(replicasets) == 1, replicasets
    config = yaml.safe_load(
        _get(kube, namespace, "configmap/contracts-agent")["data"]["config.yaml"]
    )
    assert sorted(t["name"] for t in config["tools"]) == [
        "sql_query",
        "vector_search",
        "web_search",
    ]
