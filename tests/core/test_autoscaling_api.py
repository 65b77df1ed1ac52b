"""spec.model.autoscaling and spec.agent.autoscaling: defaults, and refusals that name the
field (pydantic here; the real apiserver runs the CEL twins in
tests/operator/test_cluster_invalid.py).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sleuth.core.api import crdgen
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.kinds import AGENT_DEPLOYMENT

pytestmark = pytest.mark.unit

MODEL = {"name": "meta-llama/Llama-3.1-70B-Instruct"}
ENDPOINT = {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}


def _spec(model: dict[str, Any], agent: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"model": model, "agent": agent or {}}


def test_defaults_sleep_at_zero_and_wait_a_bounded_time() -> None:
    spec = AgentDeploymentSpec.model_validate(
        _spec({**MODEL, "autoscaling": {}}, {"autoscaling": {}})
    )
    model, agent = spec.model.autoscaling, spec.agent.autoscaling
    assert model is not None
    assert agent is not None
    assert (model.min_replicas, model.max_replicas) == (0, 1)
    assert model.wake_wait_seconds < spec.agent.request_timeout_seconds
    assert (agent.min_replicas, agent.max_replicas) == (1, 4)
    assert AgentDeploymentSpec.model_validate(_spec(MODEL)).model.autoscaling is None


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        (
            _spec({**MODEL, "autoscaling": {"minReplicas": 3, "maxReplicas": 2}}),
            "spec.model.autoscaling.minReplicas (3) must not exceed "
            "spec.model.autoscaling.maxReplicas (2)",
        ),
        (
            _spec(MODEL, {"autoscaling": {"minReplicas": 5, "maxReplicas": 4}}),
            "spec.agent.autoscaling.minReplicas (5) must not exceed",
        ),
        (_spec(MODEL, {"autoscaling": {"minReplicas": 0}}), "agent.autoscaling.minReplicas"),
        (_spec({**ENDPOINT, "autoscaling": {}}), "spec.model.autoscaling"),
        (_spec({**MODEL, "replicas": 2, "autoscaling": {}}), "spec.model.replicas and"),
        (
            _spec({**MODEL, "autoscaling": {"wakeWaitSeconds": 60}}, {"requestTimeoutSeconds": 60}),
            "spec.model.autoscaling.wakeWaitSeconds (60) must be less than "
            "spec.agent.requestTimeoutSeconds (60)",
        ),
        (_spec({**MODEL, "autoscaling": {"maxReplicas": 65}}), "autoscaling.maxReplicas"),
        (_spec({**MODEL, "autoscaling": {"targetWaitingRequests": 0}}), "targetWaitingRequests"),
        (_spec({**MODEL, "autoscaling": {"minReplica": 1}}), "autoscaling.minReplica"),
    ],
)
def test_contradictions_are_refused_naming_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        AgentDeploymentSpec.model_validate(spec)
    assert field in str(err.value)


def test_the_crd_carries_the_same_rules_for_the_apiserver() -> None:
    crd = yaml.safe_load(crdgen.render(AGENT_DEPLOYMENT))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    messages = [r["message"] for r in schema["x-kubernetes-validations"]]
    model = schema["properties"]["model"]
    messages += [r["message"] for r in model["x-kubernetes-validations"]]
    scaling = model["properties"]["autoscaling"]
    messages += [r["message"] for r in scaling["x-kubernetes-validations"]]
    agent = schema["properties"]["agent"]["properties"]["autoscaling"]
    messages += [r["message"] for r in agent["x-kubernetes-validations"]]
    for field in (
        "spec.model.autoscaling.wakeWaitSeconds must be less than",
        "spec.model.autoscaling scales the model server sleuth runs",
        "spec.model.replicas and spec.model.autoscaling",
        "spec.model.autoscaling.minReplicas must not exceed",
        "spec.agent.autoscaling.minReplicas must not exceed",
    ):
        assert any(m.startswith(field) for m in messages), field
    assert agent["properties"]["minReplicas"]["minimum"] == 1
    assert scaling["properties"]["minReplicas"]["minimum"] == 0
