"""Autoscaling against the test control plane: the operator renders ScaledObjects that KEDA's own
CRD (from its Go module) accepts, leaves the replicas of what they scale to the scaler (no field
manager fight: what a scaler writes through the scale subresource stays, and a converged operator
writes nothing), reports the replicas and ``ModelScaledToZero`` in the status and in
``kubectl get``; without KEDA the agent gets an autoscaling/v2 HPA.

The scaler itself is played here by ``kubectl scale`` (the scale subresource KEDA and the HPA
write through); KEDA's own run is tests/operator/test_cluster_keda.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.operator.eval_metrics_kit import get, metered_operator
from tests.operator.test_cluster_loop import settled, writes
from tests.support.paths import EXAMPLES, ROOT
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

AUTOSCALED = ROOT / "examples" / "contracts-autoscaled"
MANAGER = "sleuth-operator"


def _apply_autoscaled(kube: Any, namespace: str) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    kube.kubectl("apply", "-n", namespace, "-f", str(AUTOSCALED))


def _status(kube: Any, namespace: str) -> dict[str, Any]:
    return dict(get(kube, namespace, "agentdeployment/contracts").get("status") or {})


def _condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


def _replicas_owners(kube: Any, namespace: str, deployment: str) -> list[str]:
    """The field managers that own the Deployment's spec.replicas (none at all would be a
    Deployment without managedFields: refused, so that the check cannot pass vacuously)."""
    out = kube.kubectl(
        "get", f"deployment/{deployment}", "-n", namespace, "-o", "json", "--show-managed-fields"
    )
    obj = json.loads(out.stdout)
    assert obj["metadata"].get("managedFields"), "no managedFields to read"
    return [
        m["manager"]
        for m in obj["metadata"].get("managedFields") or []
        if "f:replicas" in (m.get("fieldsV1") or {}).get("f:spec", {})
    ]


def test_scaled_objects_own_the_replicas_and_the_status_follows_them(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    _apply_autoscaled(kube, namespace)
    with metered_operator(kube, namespace, tmp_path / "operator.log") as (_, port):
        model = eventually(
            lambda: get(kube, namespace, "scaledobject/contracts-model"),
            what="the model server's ScaledObject",
        )
        agent = get(kube, namespace, "scaledobject/contracts-agent")
        assert model["spec"]["minReplicaCount"] == 0
        assert model["spec"]["scaleTargetRef"]["name"] == "contracts-model"
        assert agent["spec"]["scaleTargetRef"]["name"] == "contracts-agent"
        owner = model["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("AgentDeployment", "contracts")
        eventually(lambda: get(kube, namespace, "deployment/contracts-agent"), what="the agent")
        for name in ("contracts-model", "contracts-agent"):
            assert MANAGER not in _replicas_owners(kube, namespace, name), name

        # KEDA at work: the model server to zero, the agent to three (the scale subresource).
        kube.kubectl("scale", "-n", namespace, "deployment/contracts-model", "--replicas=0")
        kube.kubectl("scale", "-n", namespace, "deployment/contracts-agent", "--replicas=3")
        status = eventually(
            lambda: (
                (s := _status(kube, namespace)).get("modelDesiredReplicas") == 0
                and s.get("agentDesiredReplicas") == 3
                and s
            ),
            what="the status to show the scaled replicas",
        )
        asleep = _condition(status, "ModelScaledToZero")
        assert (asleep["status"], asleep["reason"]) == ("True", "ScaledToZero")
        assert status["modelReplicas"] == 0
        ready = eventually(
            lambda: (c := _condition(_status(kube, namespace), "Ready"))["status"] == "True" and c,
            what="Ready with the model server asleep",
        )
        assert "model server asleep" in ready["message"]

        # No fight: the operator reconciled after the scale (the status says so) and wrote
        # nothing back over it; once settled, it writes nothing at all.
        converged = settled(port)
        time.sleep(6)  # more than a resync of the test operator (--resync-seconds 5)
        assert writes(port) == converged
        deployments = {
            n: get(kube, namespace, f"deployment/{n}")["spec"]["replicas"]
            for n in ("contracts-model", "contracts-agent")
        }
        assert deployments == {"contracts-model": 0, "contracts-agent": 3}

        columns = kube.kubectl("get", "agentdeployments", "-n", namespace).stdout
        header = columns.splitlines()[0]
        assert "MODEL REPLICAS" in header
        assert "AGENT REPLICAS" in header
        wide = kube.kubectl("get", "agentdeployments", "-n", namespace, "-o", "wide").stdout
        assert "MODEL DESIRED" in wide.splitlines()[0]

        # Awake again.
        kube.kubectl("scale", "-n", namespace, "deployment/contracts-model", "--replicas=1")
        awake = eventually(
            lambda: (
                (c := _condition(_status(kube, namespace), "ModelScaledToZero"))["status"]
                == "False"
                and c
            ),
            what="ModelScaledToZero=False once the model server has a replica",
        )
        assert awake["reason"] == "ModelAwake"

        # Autoscaling off: the scalers go, and the operator owns the replicas again.
        patch = [
            {"op": "remove", "path": "/spec/model/autoscaling"},
            {"op": "remove", "path": "/spec/agent/autoscaling"},
        ]
        kube.kubectl(
            "patch", "agentdeployment", "contracts", "-n", namespace,
            "--type=json", "-p", json.dumps(patch),
        )  # fmt: skip
        eventually(
            lambda: (
                not get(kube, namespace, "scaledobject/contracts-model")
                and not get(kube, namespace, "scaledobject/contracts-agent")
            ),
            what="the ScaledObjects pruned",
        )
        eventually(
            lambda: get(kube, namespace, "deployment/contracts-agent")["spec"]["replicas"] == 1,
            what="the agent back at spec.agent.replicas",
        )
        assert MANAGER in _replicas_owners(kube, namespace, "contracts-agent")
        status = eventually(
            lambda: not _condition(s := _status(kube, namespace), "ModelScaledToZero") and s,
            what="no ModelScaledToZero without model autoscaling",
        )


def test_without_keda_the_agent_gets_an_hpa_and_the_model_server_stays_up(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    _apply_autoscaled(kube, namespace)
    with metered_operator(kube, namespace, tmp_path / "operator.log", "--autoscaler", "hpa"):
        hpa = eventually(
            lambda: get(kube, namespace, "horizontalpodautoscaler/contracts-agent"),
            what="the agent's HorizontalPodAutoscaler",
        )
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
        assert hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == (
            "sleuth_agent_requests_in_flight"
        )
        assert not get(kube, namespace, "scaledobject/contracts-model")
        model = get(kube, namespace, "deployment/contracts-model")
        assert model["spec"]["replicas"] == 1
        assert MANAGER in _replicas_owners(kube, namespace, "contracts-model")
        status = eventually(
            lambda: _condition(s := _status(kube, namespace), "ModelScaledToZero") and s,
            what="ModelScaledToZero",
        )
        cond = _condition(status, "ModelScaledToZero")
        assert (cond["status"], cond["reason"]) == ("False", "KedaAbsent")
        assert (
            yaml.safe_load(
                get(kube, namespace, "configmap/contracts-agent")["data"]["config.yaml"]
            )["model"].get("wakeWaitSeconds")
            is None
        )
