"""The Argo CD health check of docs/gitops.md, run in a real Lua runtime against sample statuses."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

lupa = pytest.importorskip("lupa", reason="lupa (dev extra) runs the Lua")

KINDS = ("AgentDeployment", "ToolBinding", "EvalSchedule")


def health_script() -> str:
    text = (ROOT / "docs" / "gitops.md").read_text(encoding="utf-8")
    (script,) = re.findall(r"```lua\n(.*?)```", text, re.S)
    for kind in KINDS:  # the ConfigMap snippet names every kind
        assert f"resource.customizations.health.sleuth.dev_{kind}:" in text
    return script


def health(obj: dict[str, Any]) -> tuple[str, str]:
    """Run the script as Argo CD does: a global ``obj``, a table returned."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)

    def to_lua(value: Any) -> Any:
        if isinstance(value, dict):
            return runtime.table_from({k: to_lua(v) for k, v in value.items()})
        if isinstance(value, list):
            return runtime.table_from([to_lua(v) for v in value])
        return value

    runtime.globals().obj = to_lua(obj)
    result = runtime.execute(health_script())
    return str(result["status"]), str(result["message"])


def resource(kind: str, generation: int = 3, status: dict[str, Any] | None = None) -> Any:
    obj: dict[str, Any] = {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": kind,
        "metadata": {"name": "contracts", "namespace": "team-a", "generation": generation},
        "spec": {},
    }
    if status is not None:
        obj["status"] = status
    return obj


def cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, str]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-11-29T20:00:00Z",
    }


def observed(*conditions: dict[str, str], generation: int = 3) -> dict[str, Any]:
    return {"observedGeneration": generation, "conditions": list(conditions)}


@pytest.mark.parametrize("kind", KINDS)
def test_no_status_yet_is_progressing(kind: str) -> None:
    status, message = health(resource(kind))
    assert status == "Progressing"
    assert "operator" in message


@pytest.mark.parametrize("kind", KINDS)
def test_stale_generation_is_progressing_even_if_ready(kind: str) -> None:
    ready = cond("Ready", "True", "Ready", "model and agent serving")
    status, message = health(resource(kind, 4, observed(ready, generation=3)))
    assert (status, message) == (
        "Progressing",
        "The sleuth operator has not yet observed generation 4",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_ready_is_healthy(kind: str) -> None:
    status, message = health(
        resource(
            kind,
            status=observed(
                cond("Ready", "True", "Ready", "model and agent serving; 2 tools bound"),
                cond("Progressing", "False", "Complete", "no rollout in progress"),
                cond("Degraded", "False", "AsExpected", "all bound tools are ready"),
            ),
        )
    )
    assert (status, message) == ("Healthy", "Ready: model and agent serving; 2 tools bound")


@pytest.mark.parametrize("kind", KINDS)
def test_degraded_wins_and_names_the_reason(kind: str) -> None:
    missing = "spec.model.tokenSecretRef: Secret hf-token not found"
    status, message = health(
        resource(
            kind,
            status=observed(
                cond("Ready", "False", "SecretNotFound", missing),
                cond("Progressing", "False", "Complete"),
                cond("Degraded", "True", "SecretNotFound", missing),
            ),
        )
    )
    assert (status, message) == ("Degraded", f"SecretNotFound: {missing}")


def test_serving_agent_with_a_tool_down_is_degraded() -> None:
    status, message = health(
        resource(
            "AgentDeployment",
            status=observed(
                cond("Ready", "True", "Ready", "model and agent serving; 2 tools bound"),
                cond("Degraded", "True", "ToolsNotReady", "tools not ready: web"),
            ),
        )
    )
    assert (status, message) == ("Degraded", "ToolsNotReady: tools not ready: web")


@pytest.mark.parametrize("kind", KINDS)
def test_rolling_out_is_progressing(kind: str) -> None:
    rolling = "Deployment contracts-agent: 1/2 replicas available, 2/2 updated"
    status, message = health(
        resource(
            kind,
            status=observed(
                cond("Ready", "False", "ModelNotReady", "waiting"),
                cond("Progressing", "True", "RollingOut", rolling),
                cond("Degraded", "False", "AsExpected"),
            ),
        )
    )
    assert (status, message) == ("Progressing", f"RollingOut: {rolling}")


def test_a_rollout_that_keeps_serving_is_progressing_not_healthy() -> None:
    """Ready stays True during a rollout with enough replicas available; Argo CD still waits
    for the rollout, as it does for a Deployment."""
    rolling = "Deployment contracts-agent: 2/2 replicas available, 1/2 updated"
    status, message = health(
        resource(
            "AgentDeployment",
            status=observed(
                cond("Ready", "True", "Ready", "model and agent serving; 3 tools bound"),
                cond("Progressing", "True", "RollingOut", rolling),
                cond("Degraded", "False", "AsExpected"),
            ),
        )
    )
    assert (status, message) == ("Progressing", f"RollingOut: {rolling}")


def test_a_rollout_past_its_deadline_is_degraded() -> None:
    stuck = "Deployment contracts-agent: 2/2 replicas available, 1/2 updated; progress deadline"
    status, message = health(
        resource(
            "AgentDeployment",
            status=observed(
                cond("Ready", "True", "Ready", "model and agent serving; 3 tools bound"),
                cond("Progressing", "False", "ProgressDeadlineExceeded", stuck),
                cond("Degraded", "True", "ProgressDeadlineExceeded", stuck),
            ),
        )
    )
    assert (status, message) == ("Degraded", f"ProgressDeadlineExceeded: {stuck}")


def test_not_ready_and_not_progressing_is_degraded() -> None:
    status, message = health(
        resource(
            "ToolBinding",
            status=observed(
                cond("Ready", "False", "ToolServiceNotReady", "0/1 replicas available"),
                cond("Progressing", "False", "Complete"),
            ),
        )
    )
    assert (status, message) == ("Degraded", "ToolServiceNotReady: 0/1 replicas available")


def test_ready_unknown_is_progressing() -> None:
    status, _ = health(
        resource("EvalSchedule", status=observed(cond("Ready", "Unknown", "Reconciling")))
    )
    assert status == "Progressing"
