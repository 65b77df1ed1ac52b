"""The controller on its loop, without a cluster: which keys each watch event enqueues, and how
a reconcile's outcome decides retry or not (the applier and the watch cache: test_applier.py)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from sleuth.core.errors import KubeRejected, KubeRetryable
from sleuth.operator.controller import Controller, OperatorSettings
from sleuth.operator.evalmetrics import EvalMetrics
from sleuth.operator.loop.runtime import LoopSettings
from sleuth.operator.loop.workqueue import Backoff

pytestmark = pytest.mark.unit

NS = "team-a"


def controller(**reconcilers: Any) -> Controller:
    built = Controller.build(
        OperatorSettings(loop=LoopSettings(backoff=Backoff(base=30, cap=60))),
        api=object(),
        registry=CollectorRegistry(),
        evals=EvalMetrics(),
    )
    built.loop.reconcilers.update(reconcilers)
    return built


def drain(rt: Controller) -> list[tuple[str, str, str]]:
    keys = []
    while (key := rt.loop.queue.get(0)) is not None:
        keys.append(key)
        rt.loop.queue.done(key)
    return keys


def test_a_binding_event_wakes_the_binding_its_agent_and_the_agents_schedules() -> None:
    rt = controller()
    rt.schedule_seen(NS, "nightly", "contracts", deleted=False, spec_seen=False)
    drain(rt)
    rt.binding_seen(NS, "docs", "contracts", deleted=False)
    assert drain(rt) == [
        ("ToolBinding", NS, "docs"),
        ("AgentDeployment", NS, "contracts"),
        ("EvalSchedule", NS, "nightly"),
    ]
    rt.binding_seen(NS, "docs", "other", deleted=False)  # re-pointed: the old agent drops it
    assert set(drain(rt)) == {
        ("ToolBinding", NS, "docs"),
        ("AgentDeployment", NS, "contracts"),
        ("AgentDeployment", NS, "other"),
        ("EvalSchedule", NS, "nightly"),
    }
    assert rt.loop.cache.naming("ToolBinding", NS, "other") == ["docs"]
    assert rt.loop.cache.naming("ToolBinding", NS, "contracts") == []


def test_a_new_or_deleted_agent_wakes_its_bindings_a_status_change_does_not() -> None:
    rt = controller()
    rt.binding_seen(NS, "docs", "contracts", deleted=False)
    drain(rt)
    rt.agent_seen(NS, "contracts", deleted=False)
    assert ("ToolBinding", NS, "docs") in drain(rt)
    rt.agent_seen(NS, "contracts", deleted=False)  # e.g. its own status write
    assert drain(rt) == [("AgentDeployment", NS, "contracts")]
    rt.agent_seen(NS, "contracts", deleted=True)
    assert set(drain(rt)) == {("AgentDeployment", NS, "contracts"), ("ToolBinding", NS, "docs")}


def test_a_status_only_schedule_event_enqueues_nothing_and_the_resync_enqueues_all() -> None:
    rt = controller()
    rt.schedule_seen(NS, "nightly", "contracts", deleted=False, spec_seen=True)
    assert drain(rt) == []
    rt.agent_seen(NS, "contracts", deleted=False)
    rt.binding_seen(NS, "docs", "contracts", deleted=False)
    drain(rt)
    assert rt.loop.resync_once() == 3
    assert set(drain(rt)) == {
        ("AgentDeployment", NS, "contracts"),
        ("ToolBinding", NS, "docs"),
        ("EvalSchedule", NS, "nightly"),
    }


def test_a_child_event_wakes_its_controller_and_a_tool_childs_agent() -> None:
    rt = controller()
    child = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "namespace": NS,
            "name": "docs-tool",
            "labels": {"sleuth.dev/agent": "contracts"},
            "ownerReferences": [
                {"apiVersion": "sleuth.dev/v1alpha1", "kind": "ToolBinding", "name": "docs"},
                {
                    "apiVersion": "sleuth.dev/v1alpha1",
                    "kind": "ToolBinding",
                    "name": "docs",
                    "controller": True,
                },
            ],
        },
    }
    rt.child_seen(child, deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs"), ("AgentDeployment", NS, "contracts")]
    assert rt.loop.cache.child(("apps/v1", "Deployment", NS, "docs-tool")) is not None
    rt.child_seen(child, deleted=True)
    assert rt.loop.cache.child(("apps/v1", "Deployment", NS, "docs-tool")) is None
    assert drain(rt) == [("ToolBinding", NS, "docs"), ("AgentDeployment", NS, "contracts")]


def _tool_deployment(status: dict[str, Any], kind: str = "Deployment") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1" if kind == "Deployment" else "v1",
        "kind": kind,
        "metadata": {
            "namespace": NS,
            "name": "docs-tool",
            "uid": "u-1",
            "generation": 1,
            "resourceVersion": "7",
            "labels": {"sleuth.dev/agent": "contracts"},
            "ownerReferences": [
                {
                    "apiVersion": "sleuth.dev/v1alpha1",
                    "kind": "ToolBinding",
                    "name": "docs",
                    "controller": True,
                    "uid": "tb-1",
                },
            ],
        },
        "spec": {"replicas": 1},
        "status": status,
    }


def test_a_child_event_wakes_only_those_that_read_what_changed() -> None:
    """Its owner when its content or its rollout changed; the tool's agent only when the
    tool's Deployment starts or stops serving; nobody for a condition's new timestamp."""
    rt = controller()
    rt.child_seen(_tool_deployment({}), deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs"), ("AgentDeployment", NS, "contracts")]
    rolling = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}
    rt.child_seen(_tool_deployment(rolling), deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs")]  # not serving yet: the agent reads nothing
    touched = {**rolling, "conditions": [{"type": "Available", "lastUpdateTime": "t2"}]}
    rt.child_seen(_tool_deployment(touched), deleted=False)
    rt.child_seen(_tool_deployment({**touched, "readyReplicas": 1}), deleted=False)
    assert drain(rt) == []  # nothing its rollout is read from
    serving = {**touched, "readyReplicas": 1, "availableReplicas": 1}
    rt.child_seen(_tool_deployment(serving), deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs"), ("AgentDeployment", NS, "contracts")]
    edited = _tool_deployment(serving)
    edited["spec"]["revisionHistoryLimit"] = 3  # drift, still serving: its owner only
    rt.child_seen(edited, deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs")]
    service = _tool_deployment({}, kind="Service")
    rt.child_seen(service, deleted=False)
    assert drain(rt) == [("ToolBinding", NS, "docs")]  # the agent reads no tool Service
    rt.child_seen(service, deleted=False)
    assert drain(rt) == []


def test_outcomes_decide_retry_a_permanent_error_is_not_retried() -> None:
    calls: list[str] = []

    def flaky(namespace: str, name: str) -> dict[str, Any] | None:
        calls.append(name)
        if name == "down":
            raise KubeRetryable("apiserver unreachable")
        if name == "refused":
            raise KubeRejected(422, "spec.x: bad", reason="Invalid")
        return {"conditions": [{"type": "Ready", "status": "True"}]}

    rt = controller(AgentDeployment=flaky)
    for name in ("ok", "down", "refused"):
        rt.loop.queue.add(("AgentDeployment", NS, name))
    for key in drain_keys(rt, 3):
        rt.loop.process(key)
        rt.loop.queue.done(key)
    assert calls == ["ok", "down", "refused"]
    assert rt.loop.queue.failures(("AgentDeployment", NS, "down")) == 1
    assert rt.loop.queue.failures(("AgentDeployment", NS, "refused")) == 0
    assert rt.loop.queue.get(0) is None  # "down" waits for its back-off; "refused" is not retried
    outcome = {
        s.labels["outcome"]: s.value
        for m in rt.loop.metrics.reconciles.collect()
        for s in m.samples
        if s.name.endswith("_total") and s.labels["kind"] == "AgentDeployment"
    }
    assert outcome == {
        "success": 1,
        "retryable_error": 1,
        "permanent_error": 1,
        "error": 0,
    }


def test_a_missing_secret_or_dataset_is_looked_at_again_with_back_off() -> None:
    """No watch follows Secrets or dataset ConfigMaps: waiting for one requeues the key (with
    the per-key back-off) instead of leaving it to the resync."""

    def waiting(namespace: str, name: str) -> dict[str, Any] | None:
        reason = {"secret": "SecretNotFound", "dataset": "DatasetNotFound"}.get(name, "Ready")
        return {"conditions": [{"type": "Ready", "status": "False", "reason": reason}]}

    rt = controller(AgentDeployment=waiting)
    for name in ("secret", "dataset", "ok"):
        rt.loop.queue.add(("AgentDeployment", NS, name))
    for key in drain_keys(rt, 3):
        rt.loop.process(key)
        rt.loop.queue.done(key)
    assert rt.loop.queue.failures(("AgentDeployment", NS, "secret")) == 1
    assert rt.loop.queue.failures(("AgentDeployment", NS, "dataset")) == 1
    assert rt.loop.queue.failures(("AgentDeployment", NS, "ok")) == 0


def drain_keys(rt: Controller, count: int) -> list[tuple[str, str, str]]:
    keys = [rt.loop.queue.get(0) for _ in range(count)]
    assert None not in keys
    return [k for k in keys if k is not None]
