"""Every child of one resource, in the order the operator applies them.

The reconcilers and ``sleuth render`` (:mod:`sleuth.operator.rendercli`) both take their lists
from here, so that what ``sleuth render`` prints is what the operator applies. A pod's
NetworkPolicy comes before its workload: its pods start isolated.
"""

from __future__ import annotations

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.operator.render.agent import Binding, render_agent
from sleuth.operator.render.autoscale import model_scaler
from sleuth.operator.render.evalaccess import eval_account_name, render_eval_access
from sleuth.operator.render.evalrules import render_eval_rules
from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob
from sleuth.operator.render.meta import Manifest, Owner, RenderSettings
from sleuth.operator.render.model import model_name, render_model
from sleuth.operator.render.netpol import eval_network_policy, model_network_policy
from sleuth.operator.render.netpol_agent import agent_network_policy
from sleuth.operator.render.tool import render_tool


def agent_children(
    owner: Owner,
    spec: AgentDeploymentSpec,
    bindings: list[Binding],
    settings: RenderSettings,
    eval_schedules: list[str] | None = None,
) -> list[Manifest]:
    """An AgentDeployment's children: the model server (when it serves one), then the agent
    (``eval_schedules``: the names of its EvalSchedules, admitted as its callers)."""
    model: list[Manifest] = []
    if spec.model.serves:
        model = [
            model_network_policy(owner, settings),
            *render_model(owner, spec.model, settings),
            *model_scaler(owner, spec, model_name(owner), settings),
        ]
    agent = [
        agent_network_policy(owner, spec, bindings, settings, eval_schedules),
        *render_agent(owner, spec, bindings, settings, eval_schedules),
    ]
    return model + agent


def tool_children(
    owner: Owner,
    spec: ToolBindingSpec,
    settings: RenderSettings,
    tracing: TracingSpec | None = None,
) -> list[Manifest]:
    """A ToolBinding's children (``tracing``: its agent's ``spec.agent.tracing``)."""
    return render_tool(owner, spec, settings, tracing)


def eval_access_children(owner: Owner, agent: str) -> list[Manifest]:
    """The eval pods' ServiceAccount, Role and RoleBinding (applied first, on their own)."""
    return render_eval_access(owner, agent)


def eval_run_children(
    owner: Owner,
    spec: EvalScheduleSpec,
    target: EvalTarget,
    settings: RenderSettings,
    *,
    rules: bool,
) -> list[Manifest]:
    """The runs' NetworkPolicy and CronJob, and the PrometheusRule when ``rules`` (the cluster
    serves the kind)."""
    children = [
        eval_network_policy(eval_account_name(owner.name), owner, target.agent),
        render_eval_cronjob(owner, spec, target, settings),
    ]
    if rules:
        children.append(render_eval_rules(owner, spec, settings))
    return children


__all__ = ["agent_children", "eval_access_children", "eval_run_children", "tool_children"]
