"""Reconcile one ToolBinding: its tool service exists only while its agent does. Level-based."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from sleuth.core.api.v1alpha1.secretuse import tool_secret_uses
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    CONFIG_MAP,
    DEPLOYMENT,
    NETWORK_POLICY,
    SERVICE,
    TOOL_BINDING,
)
from sleuth.operator.bindings import bindings_for, parse_binding
from sleuth.operator.children import apply_children, rejected_conditions, retry_exhausted
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.guard import agent_uses, check_secret_uses, spec_refusal, unchecked_secrets
from sleuth.operator.reconcile_common import (
    Context,
    observe_rollout,
    owner_of,
    prune,
    write_status,
)
from sleuth.operator.render.owned import tool_children
from sleuth.operator.render.tool import tool_endpoint
from sleuth.operator.status import (
    Cond,
    invalid_conditions,
    progressing_condition,
    stuck_condition,
)

STATUS_KEYS = ("toolName", "endpoint")
CHILDREN = [DEPLOYMENT, SERVICE, CONFIG_MAP, NETWORK_POLICY]


def _without_children(
    ctx: Context, obj: dict[str, Any], reason: str, message: str, extra: dict[str, Any]
) -> dict[str, Any]:
    owner = owner_of(obj)
    selector = f"app.kubernetes.io/instance={owner.name},app.kubernetes.io/component=tool"
    prune(ctx.kube, owner, CHILDREN, selector, set())
    conditions = [
        Cond("Ready", "False", reason, message),
        Cond("Progressing", "False", reason, "waiting: " + message),
        Cond("Degraded", "True", reason, message),
    ]
    return write_status(ctx, TOOL_BINDING, obj, conditions, extra, STATUS_KEYS)


def agent_tracing(agent: dict[str, Any]) -> TracingSpec | None:
    """The AgentDeployment's ``spec.agent.tracing``, which its tool services follow; None when
    it is not valid (the agent's own status says why; the tool service keeps the default)."""
    raw = (agent.get("spec") or {}).get("agent", {}).get("tracing")
    try:
        return TracingSpec.model_validate(raw or {})
    except ValidationError:
        return None


def reconcile_tool(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    """Converge one ToolBinding; returns the status it holds afterwards (None if gone)."""
    kube = ctx.kube
    obj = kube.get(TOOL_BINDING, namespace, name)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    try:
        spec = parse_binding(obj)
    except InvalidSpec as err:
        conditions = invalid_conditions(str(err))
        return write_status(ctx, TOOL_BINDING, obj, conditions, {}, STATUS_KEYS)

    extra = {"toolName": spec.tool_name}
    agent_name = spec.agent_ref.name
    agent = kube.get(AGENT_DEPLOYMENT, namespace, agent_name)
    if agent is None or agent["metadata"].get("deletionTimestamp"):
        message = f"spec.agentRef.name: AgentDeployment {agent_name} not found in {namespace}"
        return _without_children(ctx, obj, "AgentNotFound", message, extra)
    clashes = bindings_for(
        kube.list_naming(TOOL_BINDING, namespace, agent_name), agent_name
    ).refused
    if name in clashes:
        return _without_children(ctx, obj, "ToolNameConflict", clashes[name], extra)

    not_allowed = spec_refusal(ToolBindingSpec, spec, ctx.settings)
    if not_allowed is not None:  # like an invalid spec: nothing applied, nothing removed
        return write_status(ctx, TOOL_BINDING, obj, not_allowed.conditions(), extra, STATUS_KEYS)
    tracing = agent_tracing(agent)
    uses = tool_secret_uses(spec) + agent_uses(agent_name, None, tracing)
    secrets = check_secret_uses(kube, namespace, uses)
    owner = owner_of(obj)
    manifests = tool_children(owner, spec, ctx.settings, tracing)
    refusal = secrets.refusal() or unchecked_secrets(manifests, secrets.checked)
    if refusal is not None:  # not rendered, and nothing of it keeps using the Secret
        return _without_children(ctx, obj, refusal.reason, refusal.message, extra)
    refused = apply_children(kube, manifests)
    extra["endpoint"] = tool_endpoint(name, namespace, ctx.settings)

    service = observe_rollout(kube, namespace, f"{name}-tool", "tool", name)
    progressing = progressing_condition([service])
    if not service.ready:
        ready = Cond("Ready", "False", "ToolServiceNotReady", service.describe())
        degraded = Cond("Degraded", "False", "AsExpected", "waiting for the tool service")
    else:
        ready = Cond("Ready", "True", "Ready", f"{spec.tool_name} is served for agent {agent_name}")
        degraded = Cond("Degraded", "False", "AsExpected", "tool service ready")
    degraded = stuck_condition([service], progressing) or degraded
    conditions = rejected_conditions(refused, [ready, progressing, degraded])
    written = write_status(ctx, TOOL_BINDING, obj, conditions, extra, STATUS_KEYS)
    retry_exhausted(refused)
    return written


__all__ = ["reconcile_tool"]
