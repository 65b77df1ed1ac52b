"""Reconcile one EvalSchedule: its CronJob, the ServiceAccount, Role and RoleBinding its pods
report their results with, the NetworkPolicy of its run pods, and its PrometheusRule where that
kind is served.

The CronJob targets the agent's Service and, unless ``spec.judge`` says otherwise, the agent's
model server (both read from the AgentDeployment's status), and answer relevancy's embeddings
default to the agent's retrieval embeddings endpoint (its oldest vector_search ToolBinding naming
one; else the judge's /embeddings). Without the AgentDeployment, or
before it reports its model, nothing is scheduled. Without the PrometheusRule CRD (no
prometheus-operator), the CronJob still runs and the condition ``Degraded`` says the alerts are
missing. Level-based; the run results in status are written by the runs, not here.
"""

from __future__ import annotations

from typing import Any

from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec
from sleuth.core.api.v1alpha1.secretuse import eval_secret_uses
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    CONFIG_MAP,
    CRON_JOB,
    EVAL_SCHEDULE,
    NETWORK_POLICY,
    PROMETHEUS_RULE,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
    TOOL_BINDING,
    Kube,
)
from sleuth.operator.bindings import bindings_for
from sleuth.operator.children import (
    CHILD_CONFLICT,
    Refusal,
    apply_children,
    rejected_conditions,
    retry_exhausted,
)
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.guard import agent_uses, check_secret_uses, spec_refusal, unchecked_secrets
from sleuth.operator.reconcile_common import (
    Context,
    owner_of,
    parse_spec,
    prune,
    write_status,
)
from sleuth.operator.render.agent import retrieval_embedding
from sleuth.operator.render.cron import SPAN_YEARS, longest_gap_seconds
from sleuth.operator.render.evalrules import rule_name
from sleuth.operator.render.evalschedule import (
    EvalEmbeddings,
    EvalTarget,
    cronjob_name,
    render_eval_cronjob,
)
from sleuth.operator.render.owned import eval_access_children, eval_run_children
from sleuth.operator.status import Cond, invalid_conditions

STATUS_KEYS: tuple[str, ...] = ()
# Pruned in this order: the CronJob first, so no new run starts without its account.
CHILDREN = [CRON_JOB, NETWORK_POLICY, ROLE_BINDING, ROLE, SERVICE_ACCOUNT]


def _selector(name: str) -> str:
    return f"app.kubernetes.io/instance={name},app.kubernetes.io/component=eval"


def _without_children(
    ctx: Context, obj: dict[str, Any], reason: str, message: str
) -> dict[str, Any]:
    owner = owner_of(obj)
    prune(ctx.kube, owner, CHILDREN, _selector(owner.name), set())
    if ctx.kube.serves(PROMETHEUS_RULE):
        prune(ctx.kube, owner, [PROMETHEUS_RULE], _selector(owner.name), set())
    conditions = [
        Cond("Ready", "False", reason, message),
        Cond("Progressing", "False", reason, "waiting: " + message),
        Cond("Degraded", "True", reason, message),
    ]
    return write_status(ctx, EVAL_SCHEDULE, obj, conditions, {}, STATUS_KEYS)


def eval_target(agent: dict[str, Any], bindings: list[dict[str, Any]]) -> EvalTarget | None:
    """The agent's model endpoint and name from its status (None until it reports them), and
    its retrieval embeddings endpoint from its ToolBindings (``bindings``: those naming it)."""
    status = agent.get("status") or {}
    endpoint, model = status.get("modelEndpoint"), status.get("model")
    if not endpoint or not model:
        return None
    key = ((agent.get("spec") or {}).get("model") or {}).get("apiKeySecretRef")
    name = agent["metadata"]["name"]
    emb = retrieval_embedding(bindings_for(bindings, name).accepted)
    tracing = ((agent.get("spec") or {}).get("agent") or {}).get("tracing")
    return EvalTarget(
        agent=name,
        model_endpoint=str(endpoint),
        model=str(model),
        model_api_key=SecretKeyRef.model_validate(key) if key else None,
        embeddings=EvalEmbeddings(emb.endpoint, emb.model) if emb is not None else None,
        tracing=TracingSpec.model_validate(tracing) if tracing else None,
    )


def reconcile_eval(ctx: Context, namespace: str, name: str) -> dict[str, Any] | None:
    """Converge one EvalSchedule; returns the status it holds afterwards (None if gone)."""
    kube = ctx.kube
    obj = kube.get(EVAL_SCHEDULE, namespace, name)
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    try:
        spec = parse_spec(EvalScheduleSpec, obj)
        check_fires(spec.schedule)
    except InvalidSpec as err:
        return write_status(ctx, EVAL_SCHEDULE, obj, invalid_conditions(str(err)), {}, STATUS_KEYS)

    agent_name = spec.agent_ref.name
    agent = kube.get(AGENT_DEPLOYMENT, namespace, agent_name)
    if agent is None or agent["metadata"].get("deletionTimestamp"):
        message = f"spec.agentRef.name: AgentDeployment {agent_name} not found in {namespace}"
        return _without_children(ctx, obj, "AgentNotFound", message)
    target = eval_target(agent, kube.list_naming(TOOL_BINDING, namespace, agent_name))
    if target is None:
        message = f"AgentDeployment {agent_name} has not reported its model endpoint yet"
        return _without_children(ctx, obj, "ModelEndpointUnknown", message)

    not_allowed = spec_refusal(EvalScheduleSpec, spec, ctx.settings)
    if not_allowed is not None:  # like an invalid spec: nothing applied, nothing removed
        conditions = not_allowed.conditions()
        return write_status(ctx, EVAL_SCHEDULE, obj, conditions, {}, STATUS_KEYS)
    uses = eval_secret_uses(spec) + agent_uses(agent_name, target.model_api_key, target.tracing)
    secrets = check_secret_uses(kube, namespace, uses)
    owner = owner_of(obj)
    cronjob = render_eval_cronjob(owner, spec, target, ctx.settings)
    refusal = secrets.refusal() or unchecked_secrets([cronjob], secrets.checked)
    if refusal is not None:  # not rendered, and nothing of it keeps using the Secret
        return _without_children(ctx, obj, refusal.reason, refusal.message)
    # The pods' account first, then the CronJob whose pods use it; a 403 on the account is
    # reported as EvalAccessForbidden (an older chart's RBAC), and the CronJob still applied.
    # An account that exists and is not this EvalSchedule's is left alone, and then the CronJob
    # (whose pods would run as it) is not applied either.
    access = apply_children(kube, eval_access_children(owner, agent_name))
    forbidden = [r for r in access if r.status == FORBIDDEN]
    rules_served = kube.serves(PROMETHEUS_RULE)
    children = eval_run_children(owner, spec, target, ctx.settings, rules=rules_served)
    conflicts = [r for r in access if r.reason == CHILD_CONFLICT]
    if conflicts:
        children = [m for m in children if m["kind"] != CRON_JOB.kind]
        refused_job = Refusal(
            CRON_JOB.kind,
            cronjob["metadata"]["name"],
            f"not applied: its pods would run as {conflicts[0].kind} {conflicts[0].name}, "
            "which is not this EvalSchedule's",
        )
    refused = [r for r in access if r.status != FORBIDDEN] + apply_children(kube, children)
    if conflicts:
        refused.append(refused_job)

    missing = dataset_missing(kube, namespace, spec)

    job = cronjob_name(name)
    if spec.suspend:
        ready = Cond("Ready", "True", "Suspended", f"CronJob {job} is suspended")
    else:
        ready = Cond("Ready", "True", "Scheduled", f"CronJob {job} runs at '{spec.schedule}'")
    progressing = Cond(
        "Progressing",
        "False",
        "Complete",
        "CronJob and its ServiceAccount, Role, RoleBinding applied",
    )
    if rules_served:
        degraded = Cond(
            "Degraded", "False", "AsExpected", f"alerts in PrometheusRule {rule_name(name)}"
        )
    else:
        degraded = Cond(
            "Degraded",
            "True",
            "PrometheusRuleUnsupported",
            "monitoring.coreos.com/v1 PrometheusRule is not served in this cluster (is the "
            "prometheus-operator installed?): the runs are scheduled but nothing alerts on them",
        )
    if missing is not None:
        ready = Cond("Ready", "False", "DatasetNotFound", missing)
        degraded = Cond("Degraded", "True", "DatasetNotFound", missing)
    if forbidden:
        message = (
            f"the operator may not create the eval pods' ServiceAccount, Role or RoleBinding "
            f"{name}-eval (HTTP 403: {'; '.join(r.describe() for r in forbidden)}): runs cannot "
            "report to this status. Upgrade the chart "
            "(its RBAC grants serviceaccounts, roles, rolebindings and get on "
            "evalschedules/status) or grant them"
        )
        ready = Cond("Ready", "False", "EvalAccessForbidden", message)
        degraded = Cond("Degraded", "True", "EvalAccessForbidden", message)
    conditions = rejected_conditions(refused, [ready, progressing, degraded])
    conditions.append(judge_condition(spec, target))
    written = write_status(ctx, EVAL_SCHEDULE, obj, conditions, {}, STATUS_KEYS)
    retry_exhausted(refused)
    return written


FORBIDDEN = 403


def check_fires(schedule: str) -> None:
    """:class:`InvalidSpec` when ``schedule`` never fires (30 February), or once in 28 years:
    no run would ever come, and RAGEvalStale could not be rendered."""
    if longest_gap_seconds(schedule) is None:
        raise InvalidSpec(
            "spec.schedule",
            f"{schedule!r} never fires (at most once in {SPAN_YEARS} years): check the day of "
            "month against the month",
        )


def dataset_missing(kube: Kube, namespace: str, spec: EvalScheduleSpec) -> str | None:
    """What is missing of a ConfigMap dataset or of the ConfigMap of the TSA cases (naming the
    spec field), or None. The runs mount the key and verify the golden set against
    ``<key>.manifest.json``; without either every run fails. A PersistentVolumeClaim is not
    looked into (the operator does not read claims)."""
    wanted: list[tuple[str, str, list[str]]] = []
    golden = spec.dataset.config_map_ref
    if golden is not None:
        wanted.append(("spec.dataset", golden.name, [golden.key, f"{golden.key}.manifest.json"]))
    cases = spec.tool_selection.config_map_ref if spec.tool_selection else None
    if cases is not None:
        wanted.append(("spec.toolSelection", cases.name, [cases.key]))
    for field, name, keys in wanted:
        found = kube.get(CONFIG_MAP, namespace, name)
        if found is None:
            return f"{field}.configMapRef.name: ConfigMap {name} not found in {namespace}"
        held = set(found.get("data") or {}) | set(found.get("binaryData") or {})
        for key in keys:
            if key not in held:
                return f"{field}.configMapRef.key: ConfigMap {name} has no key {key}"
    return None


def judge_condition(spec: EvalScheduleSpec, target: EvalTarget) -> Cond:
    """``JudgeIndependent``: False when the judge is the agent's own model (no ``spec.judge``, or
    one naming the agent's model server and model), which grades its own answers."""
    judge = spec.judge
    if judge is not None and (
        judge.endpoint.rstrip("/") != target.model_endpoint.rstrip("/")
        or judge.model != target.model
    ):
        return Cond("JudgeIndependent", "True", "SeparateJudge", f"judged by {judge.model}")
    return Cond(
        "JudgeIndependent",
        "False",
        "JudgeIsAgentModel",
        f"the judge is the agent's own model ({target.model} at {target.model_endpoint}): it "
        "grades its own answers, which tends to inflate faithfulness and answer relevancy; set "
        "spec.judge to another model",
    )


__all__ = ["eval_target", "reconcile_eval"]
