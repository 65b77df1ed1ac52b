"""The autoscaled variant of examples/contracts renders KEDA ScaledObjects (golden file), leaves
the scaled Deployments' replicas to them, and without KEDA an HPA for the agent only.

Regenerate the golden after an intended change with ``SLEUTH_UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.autoscale import KEEP_AWAKE_THRESHOLD
from sleuth.operator.render.owned import agent_children
from tests.operator.operator_testkit import GOLDEN, example

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
AUTOSCALED = ROOT / "examples" / "contracts-autoscaled" / "10-agentdeployment.yaml"
SETTINGS = RenderSettings(
    sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0",
    prometheus_address="http://prometheus.monitoring.svc:9090",
)
HPA = dataclasses.replace(SETTINGS, autoscaler="hpa")
OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-contracts")


def _doc() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(AUTOSCALED.read_text(encoding="utf-8"))
    return loaded


def _spec(doc: dict[str, Any] | None = None) -> AgentDeploymentSpec:
    return AgentDeploymentSpec.model_validate((doc or _doc())["spec"])


def _children(settings: RenderSettings, spec: AgentDeploymentSpec | None = None) -> list[Any]:
    return agent_children(OWNER, spec or _spec(), [], settings)


def _one(children: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [c for c in children if c["kind"] == kind and c["metadata"]["name"] == name]
    return found


def test_the_autoscaled_variant_differs_from_the_example_only_in_its_replicas() -> None:
    """One AgentDeployment, two ways: no copy drifts away from examples/contracts."""
    plain = example("AgentDeployment", "contracts")[0]
    scaled = _doc()
    assert scaled["metadata"] == plain["metadata"]
    plain["spec"]["agent"].pop("replicas")
    scaled["spec"]["agent"].pop("autoscaling")
    scaled["spec"]["model"].pop("autoscaling")
    assert scaled == plain


def test_render_matches_golden() -> None:
    text = yaml.safe_dump_all(_children(SETTINGS), sort_keys=True, width=100)
    path = GOLDEN / "autoscaled.yaml"
    if os.environ.get("SLEUTH_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs from the renderer's output"


def test_scaled_deployments_carry_no_replicas_and_their_scaled_objects_own_them() -> None:
    children = _children(SETTINGS)
    for name in ("contracts-model", "contracts-agent"):
        assert "replicas" not in _one(children, "Deployment", name)["spec"], name
    model = _one(children, "ScaledObject", "contracts-model")["spec"]
    assert model["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "contracts-model",
    }
    assert (model["minReplicaCount"], model["maxReplicaCount"]) == (0, 3)
    assert model["cooldownPeriod"] == 900
    # 1 -> N belongs to the HPA KEDA makes: its replicas added for a burst stay as long too.
    behavior = model["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior == {"scaleDown": {"stabilizationWindowSeconds": 900}}
    triggers = {t["name"]: t["metadata"] for t in model["triggers"]}
    assert triggers["queue"]["query"] == (
        'sum(vllm:num_requests_waiting{namespace="team-a",service="contracts-model"})'
    )
    assert triggers["queue"]["threshold"] == "4"
    assert triggers["wake"]["query"] == (
        'sum(sleuth_agent_requests_waiting_for_model{namespace="team-a",agent="contracts"})'
    )
    assert triggers["busy"]["threshold"] == str(KEEP_AWAKE_THRESHOLD)
    assert {t["serverAddress"] for t in triggers.values()} == {SETTINGS.prometheus_address}
    agent = _one(children, "ScaledObject", "contracts-agent")["spec"]
    assert (agent["minReplicaCount"], agent["maxReplicaCount"]) == (2, 6)
    (trigger,) = agent["triggers"]
    assert trigger["metadata"]["query"] == (
        'sum(sleuth_agent_requests_in_flight{namespace="team-a",agent="contracts"})'
    )
    assert trigger["metadata"]["threshold"] == "16"
    # Up to six agent replicas: a node drain takes one at a time.
    assert _one(children, "PodDisruptionBudget", "contracts-agent")


def test_every_scaler_is_owned_and_labelled_like_the_other_children() -> None:
    for child in _children(SETTINGS) + _children(HPA):
        meta = child["metadata"]
        assert meta["ownerReferences"][0]["uid"] == OWNER.uid, child["kind"]
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "sleuth-operator"


def test_the_agent_is_told_to_wait_for_a_model_server_that_may_sleep() -> None:
    def wait(settings: RenderSettings, spec: AgentDeploymentSpec) -> Any:
        config = _one(agent_children(OWNER, spec, [], settings), "ConfigMap", "contracts-agent")
        return yaml.safe_load(config["data"]["config.yaml"])["model"].get("wakeWaitSeconds")

    assert wait(SETTINGS, _spec()) == 45
    assert wait(HPA, _spec()) is None  # no KEDA: the model server never sleeps
    awake = _doc()
    awake["spec"]["model"]["autoscaling"]["minReplicas"] = 1
    assert wait(SETTINGS, _spec(awake)) is None
    plain = AgentDeploymentSpec.model_validate(example("AgentDeployment", "contracts")[0]["spec"])
    assert wait(SETTINGS, plain) is None


def test_without_keda_the_agent_gets_an_hpa_and_the_model_server_fixed_replicas() -> None:
    children = _children(HPA)
    assert not [c for c in children if c["kind"] == "ScaledObject"]
    hpa = _one(children, "HorizontalPodAutoscaler", "contracts-agent")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] == "sleuth_agent_requests_in_flight"
    assert metric["pods"]["target"] == {"type": "AverageValue", "averageValue": "16"}
    assert "replicas" not in _one(children, "Deployment", "contracts-agent")["spec"]
    # Without KEDA nothing scales the model server: max(1, minReplicas), written by the operator.
    assert _one(children, "Deployment", "contracts-model")["spec"]["replicas"] == 1


def test_without_autoscaling_nothing_changes() -> None:
    plain = AgentDeploymentSpec.model_validate(example("AgentDeployment", "contracts")[0]["spec"])
    children = _children(SETTINGS, plain)
    kinds = {c["kind"] for c in children}
    assert not kinds & {"ScaledObject", "HorizontalPodAutoscaler"}
    assert _one(children, "Deployment", "contracts-model")["spec"]["replicas"] == 1
    assert _one(children, "Deployment", "contracts-agent")["spec"]["replicas"] == 2
