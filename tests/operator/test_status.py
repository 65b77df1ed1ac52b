"""Status logic: conditions keep their transition time, patches only when something changed."""

from __future__ import annotations

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.operator.bindings import bindings_for
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.guard import SecretVerdict
from sleuth.operator.loop.rollout import rollout
from sleuth.operator.reconcile_common import parse_spec
from sleuth.operator.status import Cond, newsworthy, settle, status_patch

pytestmark = pytest.mark.unit


def test_last_transition_time_moves_only_on_a_flip() -> None:
    first = settle(None, [Cond("Ready", "False", "ModelNotReady", "0/1")], 1, "T1")
    assert first[0]["lastTransitionTime"] == "T1"
    same = settle(first, [Cond("Ready", "False", "AgentNotReady", "0/2")], 2, "T2")
    assert same[0]["lastTransitionTime"] == "T1"
    assert same[0]["observedGeneration"] == 2
    flipped = settle(same, [Cond("Ready", "True", "Ready", "ok")], 2, "T3")
    assert flipped[0]["lastTransitionTime"] == "T3"
    assert [c["reason"] for c in newsworthy(same, flipped)] == ["Ready"]
    assert newsworthy(flipped, flipped) == []


def test_events_for_ready_and_degraded_changes_and_unhealthy_first_values() -> None:
    created = settle(
        None,
        [
            Cond("Ready", "False", "ToolServiceNotReady"),
            Cond("Progressing", "True", "RollingOut"),
            Cond("Degraded", "False", "AsExpected"),
        ],
        1,
        "T1",
    )
    assert newsworthy(None, created) == []  # only waiting for its pods: no news yet
    serving = settle(
        created,
        [
            Cond("Ready", "True", "Ready"),
            Cond("Progressing", "False", "Complete"),
            Cond("Degraded", "False", "AsExpected"),
        ],
        1,
        "T2",
    )
    assert [c["reason"] for c in newsworthy(created, serving)] == ["Ready"]
    stuck = settle(
        serving,
        [
            Cond("Ready", "True", "Ready"),
            Cond("Progressing", "False", "ProgressDeadlineExceeded"),
            Cond("Degraded", "True", "ProgressDeadlineExceeded"),
        ],
        2,
        "T3",
    )
    assert [(c["type"], c["reason"]) for c in newsworthy(serving, stuck)] == [
        ("Degraded", "ProgressDeadlineExceeded")
    ]
    broken = settle(
        None,
        [
            Cond("Ready", "False", "InvalidSpec"),
            Cond("Progressing", "False", "InvalidSpec"),
            Cond("Degraded", "True", "InvalidSpec"),
        ],
        1,
        "T1",
    )
    assert [(c["type"], c["reason"]) for c in newsworthy(None, broken)] == [
        ("Ready", "InvalidSpec"),
        ("Degraded", "InvalidSpec"),
    ]


def test_conditions_are_ordered_ready_progressing_degraded() -> None:
    conds = settle(
        None,
        [
            Cond("Degraded", "False", "AsExpected"),
            Cond("Ready", "True", "Ready"),
            Cond("Progressing", "False", "Complete"),
        ],
        1,
        "T",
    )
    assert [c["type"] for c in conds] == ["Ready", "Progressing", "Degraded"]


def test_status_patch_is_none_when_nothing_changed_and_removes_stale_keys() -> None:
    current = {"observedGeneration": 1, "tools": [{"name": "a"}], "kopf": {"x": 1}}
    assert (
        status_patch(
            current,
            {"observedGeneration": 1, "tools": [{"name": "a"}]},
            ("observedGeneration", "tools"),
        )
        is None
    )
    patch = status_patch(current, {"observedGeneration": 2}, ("observedGeneration", "tools"))
    assert patch == {"observedGeneration": 2, "tools": None}


def test_rollout_readiness() -> None:
    assert not rollout("d", None).ready
    deployment = {
        "metadata": {"generation": 3},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 3, "availableReplicas": 2, "updatedReplicas": 2},
    }
    assert rollout("d", deployment).ready
    assert not rollout("d", deployment).progressing
    # A spec change not yet observed: the two replicas still serve, a rollout is pending.
    deployment["status"]["observedGeneration"] = 2
    assert rollout("d", deployment).ready
    assert rollout("d", deployment).progressing
    deployment["status"]["availableReplicas"] = 1
    assert not rollout("d", deployment).ready


def test_invalid_spec_names_the_field() -> None:
    obj = {"spec": {"model": {"name": "google/gemma-2-9b-it"}}}
    with pytest.raises(InvalidSpec) as err:
        parse_spec(AgentDeploymentSpec, obj)
    assert err.value.field == "spec.model.toolCallParser"
    with pytest.raises(InvalidSpec) as err:
        parse_spec(AgentDeploymentSpec, {"spec": {"model": {"name": "x/Llama-3", "gpu": {}}}})
    assert err.value.field == "spec.model.gpu.count"
    with pytest.raises(InvalidSpec) as err:
        parse_spec(ToolBindingSpec, {"spec": {"agentRef": {"name": "a"}, "type": "web_search"}})
    assert err.value.field == "spec.webSearch"
    template = {
        "name": "t",
        "description": "d",
        "sql": "SELECT 1",
        "parameters": [{"name": "y", "type": "integer", "allowedValues": ["1"]}],
    }
    sql = {
        "connectionSecretRef": {"name": "db", "key": "uri"},
        "allowedTables": ["t"],
        "templates": [template],
    }
    with pytest.raises(InvalidSpec) as err:
        parse_spec(
            ToolBindingSpec,
            {"spec": {"agentRef": {"name": "a"}, "type": "sql_query", "sqlQuery": sql}},
        )
    assert err.value.field == "spec.sqlQuery.templates[0].parameters[0]"
    assert "allowedValues is only for parameters of type string" in str(err.value)


def _tb(name: str, created: str, tool: str, agent: str = "a") -> dict[str, object]:
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {
            "agentRef": {"name": agent},
            "type": "web_search",
            "name": tool,
            "webSearch": {"url": "http://s:8080", "allowExternal": True},
        },
    }


def test_the_oldest_binding_wins_a_tool_name_clash() -> None:
    objs = [
        _tb("young", "2026-01-02T00:00:00Z", "web"),
        _tb("old", "2026-01-01T00:00:00Z", "web"),
        _tb("other", "2026-01-01T00:00:00Z", "web", agent="b"),
    ]
    bound = bindings_for(objs, "a")  # type: ignore[arg-type]
    assert [b.name for b in bound.accepted] == ["old"]
    assert "already bound" in bound.refused["young"]


def test_a_secret_refusal_names_every_problem_worst_reason_first() -> None:
    unread = ["spec.model.tokenSecretRef: Secret hf-token is not used: ..."]
    missing = ["spec.sqlQuery.connectionSecretRef: Secret db not found"]
    assert SecretVerdict().refusal() is None
    only_missing = SecretVerdict(missing=missing).refusal()
    assert only_missing is not None
    assert only_missing.reason == "SecretNotFound"
    both = SecretVerdict(missing=missing, unverifiable=unread).refusal()
    assert both is not None
    assert both.reason == "SecretUnverifiable"
    assert "hf-token" in both.message
    assert "Secret db not found" in both.message
    assert [(c.type, c.status, c.reason) for c in both.conditions()] == [
        ("Ready", "False", "SecretUnverifiable"),
        ("Progressing", "False", "SecretUnverifiable"),
        ("Degraded", "True", "SecretUnverifiable"),
    ]
