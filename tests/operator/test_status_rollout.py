"""Readiness during a rollout, read from Deployment statuses as the controller writes them.

Ready answers "is it serving" (enough replicas available, of any revision); Progressing answers
"is a rollout under way" (the test ``kubectl rollout status`` makes). A spec change that keeps
enough old replicas available leaves Ready True.
"""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.operator.loop.rollout import (
    PROGRESS_DEADLINE_EXCEEDED,
    Rollout,
    max_unavailable,
    rollout,
)
from sleuth.operator.reconcile_agent import _conditions, _held, hold_left
from sleuth.operator.status import progressing_condition

pytestmark = pytest.mark.unit

MODEL_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
DEFAULT_STRATEGY = {
    "type": "RollingUpdate",
    "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
}


def deployment(
    *,
    generation: int = 2,
    replicas: int = 2,
    strategy: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Deployment as the apiserver returns it (strategy defaulted unless given)."""
    return {
        "metadata": {"name": "d", "generation": generation},
        "spec": {"replicas": replicas, "strategy": strategy or DEFAULT_STRATEGY},
        "status": status or {},
    }


def seen(observed: int, total: int, updated: int, available: int, **extra: Any) -> dict[str, Any]:
    return {
        "observedGeneration": observed,
        "replicas": total,
        "updatedReplicas": updated,
        "readyReplicas": available,
        "availableReplicas": available,
        **extra,
    }


# (what the controller shows, its status, ready, complete)
ROLLING_AGENT = [
    ("just created, nothing observed", {}, False, False),
    ("first pods starting", seen(1, 2, 2, 0), False, False),
    ("one of two first pods available", seen(1, 2, 2, 1), False, False),
    ("converged on the old spec", seen(1, 2, 2, 2), True, False),  # generation 2 not observed
    ("new spec observed, nothing replaced yet", seen(2, 2, 0, 2), True, False),
    ("a surge pod of the new revision starting", seen(2, 3, 1, 2), True, False),
    ("surge pod available, an old one terminating", seen(2, 2, 1, 2), True, False),
    ("all updated, one old pod still counted", seen(2, 3, 2, 2), True, False),
    ("complete", seen(2, 2, 2, 2), True, True),
]


@pytest.mark.parametrize(
    ("shown", "status", "ready", "complete"), ROLLING_AGENT, ids=[r[0] for r in ROLLING_AGENT]
)
def test_agent_rollout_stays_ready_while_two_replicas_serve(
    shown: str, status: dict[str, Any], ready: bool, complete: bool
) -> None:
    r = rollout("d", deployment(status=status))
    assert (r.ready, r.complete, r.progressing) == (ready, complete, not complete), shown


def test_the_first_rollout_is_ready_only_once_enough_replicas_are_available() -> None:
    first = deployment(generation=1, replicas=4)
    first["status"] = seen(1, 4, 4, 2)
    assert rollout("d", first).minimum == 3  # 25% of 4 may be unavailable
    assert not rollout("d", first).ready
    first["status"] = seen(1, 4, 4, 3)
    assert rollout("d", first).ready
    assert not rollout("d", first).complete


def test_a_single_model_server_replaced_in_place_is_not_ready_meanwhile() -> None:
    """maxSurge 0: the old vLLM pod goes first; with one replica nothing serves meanwhile."""
    one = deployment(replicas=1, strategy=MODEL_STRATEGY, status=seen(2, 1, 1, 0))
    assert not rollout("d", one).ready
    two = deployment(replicas=2, strategy=MODEL_STRATEGY, status=seen(2, 2, 1, 1))
    assert rollout("d", two).ready
    assert rollout("d", two).progressing


def test_recreate_is_not_ready_between_the_old_pods_and_the_new() -> None:
    gone = deployment(strategy={"type": "Recreate"}, status=seen(2, 0, 0, 0))
    assert not rollout("d", gone).ready
    back = deployment(strategy={"type": "Recreate"}, status=seen(2, 2, 2, 2))
    assert rollout("d", back).ready
    assert rollout("d", back).complete


@pytest.mark.parametrize(
    ("strategy", "replicas", "expected"),
    [
        (None, 1, 0),  # the apiserver's default: 25% down rounds to 0, 25% surge up to 1
        (None, 2, 0),
        (None, 4, 1),
        (None, 10, 2),
        (MODEL_STRATEGY, 1, 1),
        (MODEL_STRATEGY, 3, 1),
        ({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}, 3, 1),  # as the controller
        ({"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "0%"}}, 3, 1),
        ({"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "50%"}}, 5, 2),
        ({"rollingUpdate": {"maxUnavailable": 9}}, 3, 3),
        ({"type": "Recreate"}, 3, 3),
    ],
)
def test_max_unavailable_is_resolved_as_the_deployment_controller_does(
    strategy: dict[str, Any] | None, replicas: int, expected: int
) -> None:
    assert max_unavailable(strategy, replicas) == expected


def test_a_deployment_without_a_strategy_gets_the_apiservers_default() -> None:
    obj = deployment(replicas=4, status=seen(2, 4, 4, 3))
    del obj["spec"]["strategy"]
    assert rollout("d", obj).max_unavailable == 1
    assert rollout("d", obj).ready


def test_progressing_names_the_rollout_and_its_deadline() -> None:
    complete = rollout("a", deployment(status=seen(2, 2, 2, 2)))
    moving = rollout("b", deployment(status=seen(2, 3, 1, 2)))
    assert progressing_condition([complete]).reason == "Complete"
    cond = progressing_condition([complete, moving])
    assert (cond.status, cond.reason) == ("True", "RollingOut")
    assert cond.message == "Deployment b: 2/2 replicas available, 1/2 updated"
    stuck = seen(2, 3, 1, 2)
    stuck["conditions"] = [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
        {"type": "Progressing", "status": "False", "reason": PROGRESS_DEADLINE_EXCEEDED},
    ]
    stalled = rollout("b", deployment(status=stuck))
    assert stalled.ready
    cond = progressing_condition([complete, stalled])
    assert (cond.status, cond.reason) == ("False", PROGRESS_DEADLINE_EXCEEDED)
    assert "progress deadline exceeded" in cond.message


def _agent(status: dict[str, Any], name: str = "x-agent") -> Rollout:
    return rollout(name, deployment(status=status))


def _model(status: dict[str, Any]) -> Rollout:
    return rollout("x-model", deployment(replicas=1, strategy=MODEL_STRATEGY, status=status))


def _triples(rollouts: list[Rollout], tools: list[dict[str, Any]] | None = None) -> list[Any]:
    conds = _conditions(rollouts, tools or [])
    return [(c.type, c.status, c.reason) for c in conds]


def test_an_agent_spec_change_keeps_ready_and_reports_progressing() -> None:
    model = _model(seen(2, 1, 1, 1))
    assert _triples([model, _agent(seen(2, 3, 1, 2))]) == [
        ("Ready", "True", "Ready"),
        ("Progressing", "True", "RollingOut"),
        ("Degraded", "False", "AsExpected"),
    ]
    assert _triples([model, _agent(seen(2, 2, 2, 2))]) == [
        ("Ready", "True", "Ready"),
        ("Progressing", "False", "Complete"),
        ("Degraded", "False", "AsExpected"),
    ]


def test_an_agent_below_its_minimum_is_not_ready() -> None:
    model = _model(seen(2, 1, 1, 1))
    assert _triples([model, _agent(seen(2, 2, 2, 1))])[0] == ("Ready", "False", "AgentNotReady")
    replaced = _model(seen(2, 1, 1, 0))
    assert _triples([replaced, _agent(seen(2, 2, 2, 2))])[:2] == [
        ("Ready", "False", "ModelNotReady"),
        ("Progressing", "True", "RollingOut"),
    ]


def test_a_stuck_rollout_is_degraded_while_the_old_pods_serve() -> None:
    stuck = seen(2, 3, 1, 2)
    stuck["conditions"] = [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
    ]
    tools = [{"name": "sql_query", "ready": False}]
    assert _triples([_model(seen(2, 1, 1, 1)), _agent(stuck)], tools) == [
        ("Ready", "True", "Ready"),
        ("Progressing", "False", PROGRESS_DEADLINE_EXCEEDED),
        ("Degraded", "True", PROGRESS_DEADLINE_EXCEEDED),
    ]


@pytest.mark.parametrize(
    ("created", "now", "left"),
    [
        ("2026-12-02T08:00:00Z", "2026-12-02T08:00:00Z", 2.0),  # just created
        ("2026-12-02T08:00:00Z", "2026-12-02T08:00:01Z", 1.0),
        ("2026-12-02T08:00:00Z", "2026-12-02T08:00:02Z", 0.0),  # old enough
        ("2026-12-02T08:00:00Z", "2026-12-02T09:00:00Z", 0.0),
        ("2026-12-02T08:00:01Z", "2026-12-02T08:00:00Z", 3.0),  # a clock a second behind
        ("2026-12-02T08:05:00Z", "2026-12-02T08:00:00Z", 0.0),  # far behind: no stall
        (None, "2026-12-02T08:00:00Z", 0.0),
    ],
)
def test_the_first_rollout_is_held_for_a_moment_after_creation(
    created: str | None, now: str, left: float
) -> None:
    assert hold_left(created, now) == left


def test_a_held_agent_says_why_it_is_not_serving_yet() -> None:
    model = _model(seen(2, 1, 1, 1))
    missing = rollout("x-agent", None)
    conds = _held(_conditions([model, missing], []), "x-agent")
    assert [(c.type, c.status, c.reason) for c in conds] == [
        ("Ready", "False", "AgentNotReady"),
        ("Progressing", "True", "AwaitingToolBindings"),
        ("Degraded", "False", "AsExpected"),
    ]
    assert conds[0].message == conds[1].message
    assert conds[0].message.startswith(
        "Deployment x-agent: the agent's first rollout waits until 2 s after creation"
    )
    # A model that does not serve yet is still named first.
    waiting = _model(seen(2, 1, 1, 0))
    conds = _held(_conditions([waiting, missing], []), "x-agent")
    assert (conds[0].reason, conds[1].reason) == ("ModelNotReady", "AwaitingToolBindings")
