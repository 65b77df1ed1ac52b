"""Secrets opt in: the operator uses a Secret only for the uses the Secret itself names.

Whoever may create an AgentDeployment, ToolBinding or EvalSchedule may name any Secret of the
namespace in it; without this rule the operator would put that Secret into a pod that sends it
wherever the spec says. So a Secret says what it is for, in one annotation::

    metadata:
      annotations:
        sleuth.dev/allowed-uses: "ToolBinding/sql_query"

The value is a comma-separated list of uses; each is a kind (``AgentDeployment``,
``ToolBinding``, ``EvalSchedule``: every use by that kind) or a kind and one use of it
(``Kind/use``). The uses of each kind are the tables below: a ToolBinding's use is its tool type
(every Secret of a ``sql_query`` binding is used as ``ToolBinding/sql_query``); an
AgentDeployment's and an EvalSchedule's name the field. A Secret without the annotation, or whose
annotation does not name the use, is not used: the resource is not rendered and reports
``SecretNotAllowed`` with the field and the Secret named.

A Secret named by an AgentDeployment also reaches pods of other kinds: its tracing headers go to
its tool services, its model API key to its EvalSchedules' eval Jobs. Those stay uses of the
AgentDeployment (``AgentDeployment/tracing-headers``, ``AgentDeployment/model-api-key``), checked
wherever the Secret lands: the Secret's owner agreed to what the agent's author does with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec
from sleuth.core.api.v1alpha1.specpaths import secret_ref_paths, value_at
from sleuth.core.api.v1alpha1.toolbinding import TYPE_FIELDS, ToolBindingSpec

ALLOWED_USES_ANNOTATION = "sleuth.dev/allowed-uses"

# Secret reference (path below spec) -> its use, per kind. A ToolBinding's use is its type.
AGENT_DEPLOYMENT_USES: dict[str, str] = {
    "model.tokenSecretRef": "model-token",
    "model.apiKeySecretRef": "model-api-key",
    "agent.tracing.headersSecretRef": "tracing-headers",
    "agent.onlineEval.judge.apiKeySecretRef": "online-eval-judge",
}
# The API key Secrets of spec.agent.access.callers[] (mounted whole into the agent's pods, which
# admit whoever presents one of their values): one use for all of them.
CALLER_KEYS_USE = "caller-api-keys"
EVAL_SCHEDULE_USES: dict[str, str] = {"judge.apiKeySecretRef": "judge-api-key"}
TOOL_BINDING_USES: tuple[str, ...] = tuple(TYPE_FIELDS)

USES: dict[str, tuple[str, ...]] = {
    "AgentDeployment": (*AGENT_DEPLOYMENT_USES.values(), CALLER_KEYS_USE),
    "ToolBinding": TOOL_BINDING_USES,
    "EvalSchedule": tuple(EVAL_SCHEDULE_USES.values()),
}


@dataclass(frozen=True)
class SecretUse:
    """One Secret key a resource makes the operator use: where it is named, which use it is."""

    field: str  # the spec field naming it, e.g. spec.sqlQuery.connectionSecretRef
    ref: SecretKeyRef
    kind: str  # the kind whose spec names it
    use: str

    @property
    def entry(self) -> str:
        """The annotation entry that allows exactly this use."""
        return f"{self.kind}/{self.use}"


def allowed_uses(annotations: dict[str, str] | None) -> frozenset[str]:
    """The entries of a Secret's ``sleuth.dev/allowed-uses`` annotation (empty: none)."""
    value = (annotations or {}).get(ALLOWED_USES_ANNOTATION, "")
    return frozenset(e.strip() for e in value.split(",") if e.strip())


def allows(annotations: dict[str, str] | None, kind: str, use: str) -> bool:
    """Whether a Secret with ``annotations`` may be used as ``kind``/``use``."""
    entries = allowed_uses(annotations)
    return kind in entries or f"{kind}/{use}" in entries


def _uses(
    kind: str, model: type[BaseModel], spec: BaseModel, use_of: dict[str, str] | str
) -> list[SecretUse]:
    wire = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    found = []
    for path in secret_ref_paths(model):
        raw = value_at(wire, path)
        if raw is None:
            continue
        use = use_of if isinstance(use_of, str) else use_of[path]
        found.append(SecretUse(f"spec.{path}", SecretKeyRef.model_validate(raw), kind, use))
    return found


def agent_secret_uses(spec: AgentDeploymentSpec) -> list[SecretUse]:
    """Every Secret an AgentDeployment names."""
    return _uses("AgentDeployment", AgentDeploymentSpec, spec, AGENT_DEPLOYMENT_USES)


def tool_secret_uses(spec: ToolBindingSpec) -> list[SecretUse]:
    """Every Secret a ToolBinding names, each used as its tool type."""
    return _uses("ToolBinding", ToolBindingSpec, spec, spec.type)


def eval_secret_uses(spec: EvalScheduleSpec) -> list[SecretUse]:
    """Every Secret an EvalSchedule names."""
    return _uses("EvalSchedule", EvalScheduleSpec, spec, EVAL_SCHEDULE_USES)


def describe_uses() -> str:
    """Every entry the annotation understands, for messages and docs."""
    entries = []
    for kind, uses in USES.items():
        entries.append(kind)
        entries.extend(f"{kind}/{use}" for use in uses)
    return ", ".join(entries)


__all__ = [
    "AGENT_DEPLOYMENT_USES",
    "ALLOWED_USES_ANNOTATION",
    "EVAL_SCHEDULE_USES",
    "TOOL_BINDING_USES",
    "USES",
    "SecretUse",
    "agent_secret_uses",
    "allowed_uses",
    "allows",
    "describe_uses",
    "eval_secret_uses",
    "tool_secret_uses",
]
