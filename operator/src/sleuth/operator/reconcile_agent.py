"""Reconcile one AgentDeployment: observe, render, apply, prune, compute status. Level-based.

The same function runs for every event and on the periodic resync; it reads everything it needs
from the API server and never trusts what woke it. Applying unchanged objects changes nothing.

**One rollout on creation.** The agent's tools are in its ConfigMap, whose digest is in the pod
template: every ToolBinding that arrives after the agent Deployment is created rolls the agent's
pods again. ``kubectl apply -f examples/contracts/`` creates the AgentDeployment first and its
ToolBindings a few milliseconds later, so the first reconcile saw some of them or none, and the
Deployment got a new ReplicaSet for each one that followed. While the AgentDeployment is younger
than :data:`FIRST_ROLLOUT_HOLD_SECONDS` and its agent Deployment does not exist yet, the agent
Deployment is therefore held back (everything else, the model server first, is applied), the
status says so (``Progressing=True``, ``AwaitingToolBindings``) and :class:`FirstRolloutHeld` asks
the control loop to come back; the first reconcile after the hold creates the Deployment with
every ToolBinding applied with the agent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.secretuse import agent_secret_uses
from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    CONFIG_MAP,
    DEPLOYMENT,
    EVAL_SCHEDULE,
    HORIZONTAL_POD_AUTOSCALER,
    NETWORK_POLICY,
    POD_DISRUPTION_BUDGET,
    SCALED_OBJECT,
    SERVICE,
    TOOL_BINDING,
    Resource,
)
from sleuth.operator.accesscheck import check_key_secrets
from sleuth.operator.bindings import bindings_for
from sleuth.operator.children import apply_children, rejected_conditions, retry_exhausted
from sleuth.operator.errors import FirstRolloutHeld, InvalidSpec
from sleuth.operator.guard import check_secret_uses, spec_refusal, unchecked_secrets
from sleuth.operator.loop.rollout import Rollout, rollout
from sleuth.operator.reconcile_common import (
    Context,
    observe_rollout,
    owner_of,
    parse_spec,
    prune,
    write_status,
)
from sleuth.operator.reconcile_scaling import replica_counts, scaled_to_zero_condition
from sleuth.operator.render.access import agent_audience
from sleuth.operator.render.agent import agent_card_url, agent_config, agent_endpoint, agent_name
from sleuth.operator.render.meta import Owner, RenderSettings
from sleuth.operator.render.model import model_endpoint, model_name
from sleuth.operator.render.netpol_agent import api_server_unknown
from sleuth.operator.render.owned import agent_children
from sleuth.operator.render.tool import tool_endpoint, tool_service_name
from sleuth.operator.status import (
    Cond,
    invalid_conditions,
    progressing_condition,
    stuck_condition,
)

STATUS_KEYS = (
    "model",
    "modelEndpoint",
    "agentEndpoint",
    "agentCardUrl",
    "agentAudience",
    "tools",
    "toolNames",
    "modelReplicas",
    "modelDesiredReplicas",
    "agentReplicas",
    "agentDesiredReplicas",
)
CHILDREN = [
    DEPLOYMENT,
    SERVICE,
    CONFIG_MAP,
    POD_DISRUPTION_BUDGET,
    NETWORK_POLICY,
    HORIZONTAL_POD_AUTOSCALER,
]


def _children(settings: RenderSettings) -> list[Resource]:
    """The kinds of child pruned: ScaledObjects only where the chart says KEDA is there."""
    return [*CHILDREN, SCALED_OBJECT] if settings.autoscaler == "keda" else CHILDREN


def reconcile_agent(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    """Converge one AgentDeployment; returns the status it holds afterwards (None if gone)."""
    kube = ctx.kube
    obj = kube.get(AGENT_DEPLOYMENT, namespace, name)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None  # ownerReferences let the garbage collector remove the children
    try:
        spec = parse_spec(AgentDeploymentSpec, obj)
    except InvalidSpec as err:
        return write_status(
            ctx, AGENT_DEPLOYMENT, obj, invalid_conditions(str(err)), {}, STATUS_KEYS
        )

    not_allowed = spec_refusal(AgentDeploymentSpec, spec, ctx.settings)
    if not_allowed is not None:  # like an invalid spec: nothing applied, nothing removed
        conditions = not_allowed.conditions()
        return write_status(ctx, AGENT_DEPLOYMENT, obj, conditions, {}, STATUS_KEYS)
    owner = owner_of(obj)
    bound = bindings_for(kube.list_naming(TOOL_BINDING, namespace, name), name)
    schedules = [s["metadata"]["name"] for s in kube.list_naming(EVAL_SCHEDULE, namespace, name)]
    manifests = agent_children(owner, spec, bound.accepted, ctx.settings, schedules)
    secrets = check_secret_uses(kube, namespace, agent_secret_uses(spec))
    secrets = check_key_secrets(kube, namespace, spec.agent.access, secrets)
    refusal = secrets.refusal() or unchecked_secrets(manifests, secrets.checked)
    if refusal is not None:  # not rendered, and nothing of it keeps using the Secret
        prune(kube, owner, _children(ctx.settings), _selector(name), set())
        conditions = refusal.conditions()
        return write_status(ctx, AGENT_DEPLOYMENT, obj, conditions, {}, STATUS_KEYS)
    held = hold_left(obj["metadata"].get("creationTimestamp"), ctx.now())
    if held and kube.observed(DEPLOYMENT, namespace, agent_name(owner)) is not None:
        held = 0.0  # created already: the hold is for its first rollout only
    if held:
        manifests = [m for m in manifests if not _is_agent_deployment(m, owner)]
    refused = apply_children(kube, manifests)
    keep = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    prune(kube, owner, _children(ctx.settings), _selector(name), keep)

    model = observe_rollout(kube, namespace, model_name(owner), "model", name)
    agent = observe_rollout(kube, namespace, agent_name(owner), "agent", name)
    rollouts = [model, agent] if spec.model.serves else [agent]
    tools: list[dict[str, Any]] = []
    for b in bound.accepted:
        tool = rollout(
            b.name, kube.observed(DEPLOYMENT, namespace, tool_service_name(b.name))
        )  # readiness only
        tools.append(
            {
                "name": b.spec.tool_name,
                "type": b.spec.type,
                "binding": b.name,
                "endpoint": tool_endpoint(b.name, namespace, ctx.settings),
                "ready": tool.ready,
            }
        )
    tools.sort(key=lambda t: (t["name"], t["binding"]))
    conditions = _conditions(rollouts, tools)
    access = agent_config(owner, spec, bound.accepted, ctx.settings, schedules).access
    conditions = _api_server_unknown(conditions, api_server_unknown(access, ctx.settings))
    if spec.model.serves and spec.model.autoscaling is not None:
        conditions.append(scaled_to_zero_condition(model, ctx.settings))
    if held:
        conditions = _held(conditions, agent_name(owner))
    conditions = rejected_conditions(refused, conditions)
    extra = {
        "model": spec.model.effective_served_name,
        "modelEndpoint": model_endpoint(owner, spec.model, ctx.settings),
        "agentEndpoint": agent_endpoint(owner, ctx.settings),
        "agentCardUrl": agent_card_url(owner, spec, ctx.settings),
        "agentAudience": agent_audience(owner),
        "tools": tools or None,
        "toolNames": ",".join(t["name"] for t in tools) or None,
        **replica_counts(model if spec.model.serves else None, agent),
    }
    written = write_status(ctx, AGENT_DEPLOYMENT, obj, conditions, extra, STATUS_KEYS)
    retry_exhausted(refused)
    if held:
        raise FirstRolloutHeld(
            f"AgentDeployment {namespace}/{name}: {_hold_message()} ({held:.0f} s left)"
        )
    return written


FIRST_ROLLOUT_HOLD_SECONDS = 2
AWAITING_TOOL_BINDINGS = "AwaitingToolBindings"
API_SERVER_UNKNOWN = "APIServerUnknown"


def hold_left(created: str | None, now: str, hold: float = FIRST_ROLLOUT_HOLD_SECONDS) -> float:
    """Seconds the first rollout of an agent created at ``created`` still waits at ``now`` (both
    RFC 3339, whole seconds): 0 once it is ``hold`` seconds old. A clock that disagrees with the
    apiserver's by ``hold`` or more in either direction holds nothing, so no skew stalls it."""
    if not created:
        return 0.0
    age = (_parse(now) - _parse(created)).total_seconds()
    return hold - age if abs(age) < hold else 0.0


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _is_agent_deployment(manifest: dict[str, Any], owner: Owner) -> bool:
    return (manifest["kind"], manifest["metadata"]["name"]) == (DEPLOYMENT.kind, agent_name(owner))


def _hold_message() -> str:
    """The same text all through the hold: the status is written once."""
    return (
        f"the agent's first rollout waits until {FIRST_ROLLOUT_HOLD_SECONDS} s after creation "
        "for ToolBindings applied with the AgentDeployment, so that its pods start once, with "
        "every tool"
    )


def _held(conditions: list[Cond], deployment: str) -> list[Cond]:
    """``conditions`` of an agent whose Deployment is held back: Ready False (nothing serves
    yet), Progressing True, both saying why."""
    message = f"Deployment {deployment}: {_hold_message()}"
    out = []
    for cond in conditions:
        if cond.type == "Ready" and cond.status == "False" and cond.reason == "AgentNotReady":
            cond = Cond("Ready", "False", "AgentNotReady", message)
        elif cond.type == "Progressing":
            cond = Cond("Progressing", "True", AWAITING_TOOL_BINDINGS, message)
        out.append(cond)
    return out


def _api_server_unknown(conditions: list[Cond], why: str | None) -> list[Cond]:
    """``conditions`` with Degraded saying ``why`` (render/netpol_agent.py), unless a stuck
    rollout already says more."""
    if why is None:
        return conditions
    out = []
    for cond in conditions:
        if cond.type == "Degraded" and cond.reason in ("AsExpected", "ToolsNotReady"):
            extra = f"; {cond.message}" if cond.reason == "ToolsNotReady" else ""
            cond = Cond("Degraded", "True", API_SERVER_UNKNOWN, why + extra)
        out.append(cond)
    return out


def _selector(name: str) -> str:
    return f"app.kubernetes.io/instance={name},app.kubernetes.io/component in (model,agent)"


def _conditions(rollouts: list[Rollout], tools: list[dict[str, Any]]) -> list[Cond]:
    """Ready while model and agent serve (a rollout that keeps enough replicas available
    included), Progressing while one rolls out, Degraded when a rollout is stuck or a tool is
    down."""
    waiting = [r for r in rollouts if not r.ready]
    if waiting:
        model_first = waiting[0] is rollouts[0] and len(rollouts) == 2
        message = "; ".join(r.describe() for r in waiting)
        ready = Cond("Ready", "False", "ModelNotReady" if model_first else "AgentNotReady", message)
    elif len(rollouts) == 2 and rollouts[0].exists and rollouts[0].desired == 0:
        ready = Cond(
            "Ready",
            "True",
            "Ready",
            f"agent serving, model server asleep at zero replicas (a request wakes it); "
            f"{len(tools)} tools bound",
        )
    else:
        ready = Cond("Ready", "True", "Ready", f"model and agent serving; {len(tools)} tools bound")
    progressing = progressing_condition(rollouts)
    down = [t["name"] for t in tools if not t["ready"]]
    stuck = stuck_condition(rollouts, progressing)
    if stuck is not None:
        degraded = stuck
    elif down:
        degraded = Cond("Degraded", "True", "ToolsNotReady", "tools not ready: " + ", ".join(down))
    else:
        degraded = Cond("Degraded", "False", "AsExpected", "all bound tools are ready")
    return [ready, progressing, degraded]


__all__ = ["FIRST_ROLLOUT_HOLD_SECONDS", "hold_left", "reconcile_agent"]
