"""The sleuth kinds of v1alpha1 as CRD descriptors: names, printer columns, schema models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec, AgentDeploymentStatus
from sleuth.core.api.v1alpha1.common import GROUP, VERSION
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec, EvalScheduleStatus
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec, ToolBindingStatus

CATEGORY = "sleuth"

READY_COLUMN = {
    "name": "Ready",
    "type": "string",
    "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    "description": "Whether everything the resource made is serving.",
}
REASON_COLUMN = {
    "name": "Reason",
    "type": "string",
    "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
    "description": "Reason of the Ready condition.",
    "priority": 1,
}
AGE_COLUMN = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


@dataclass(frozen=True)
class Kind:
    """One custom resource kind and what its CRD says about it."""

    kind: str
    plural: str
    short_names: tuple[str, ...]
    description: str
    spec: type[BaseModel]
    status: type[BaseModel]
    columns: tuple[dict[str, Any], ...]
    root_rules: tuple[dict[str, str], ...] = field(default_factory=tuple)

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"

    @property
    def group(self) -> str:
        return GROUP

    @property
    def version(self) -> str:
        return VERSION


# Children are named <name>-model-config etc.: keep names short and valid DNS-1035 labels.
NAME_RULE = {
    "rule": "size(self.metadata.name) <= 40 && "
    "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "message": "metadata.name must be at most 40 characters, start with a letter and hold only "
    "lowercase letters, digits and '-' (it names Services)",
}

AGENT_DEPLOYMENT = Kind(
    kind="AgentDeployment",
    plural="agentdeployments",
    short_names=("agd", "agentdep"),
    description="A tool-augmented retrieval agent: a model (served with vLLM on GPUs, or an "
    "existing endpoint) and the agent service that plans with it. Tools are bound by ToolBindings.",
    spec=AgentDeploymentSpec,
    status=AgentDeploymentStatus,
    columns=(
        READY_COLUMN,
        {
            "name": "Model",
            "type": "string",
            "jsonPath": ".status.model",
            "description": "Model name the agent sends.",
        },
        {
            "name": "GPUs",
            "type": "integer",
            "jsonPath": ".spec.model.gpu.count",
            "description": "GPUs per model server pod.",
        },
        {
            "name": "Model Replicas",
            "type": "integer",
            "jsonPath": ".status.modelReplicas",
            "description": "Available model server replicas (0 while it sleeps).",
        },
        {
            "name": "Agent Replicas",
            "type": "integer",
            "jsonPath": ".status.agentReplicas",
            "description": "Available agent replicas.",
        },
        {
            "name": "Tools",
            "type": "string",
            "jsonPath": ".status.toolNames",
            "description": "Tools bound to the agent.",
        },
        {
            "name": "Model Desired",
            "type": "integer",
            "jsonPath": ".status.modelDesiredReplicas",
            "description": "Model server replicas wanted now (by the spec or its autoscaler).",
            "priority": 1,
        },
        {
            "name": "Agent Desired",
            "type": "integer",
            "jsonPath": ".status.agentDesiredReplicas",
            "description": "Agent replicas wanted now (by the spec or its autoscaler).",
            "priority": 1,
        },
        REASON_COLUMN,
        AGE_COLUMN,
    ),
    root_rules=(NAME_RULE,),
)

TOOL_BINDING = Kind(
    kind="ToolBinding",
    plural="toolbindings",
    short_names=("tb", "toolb"),
    description="Binds one tool (vector_search, sql_query or web_search) to one AgentDeployment; "
    "the operator runs it as a tool service that only that agent can reach.",
    spec=ToolBindingSpec,
    status=ToolBindingStatus,
    columns=(
        READY_COLUMN,
        {
            "name": "Agent",
            "type": "string",
            "jsonPath": ".spec.agentRef.name",
            "description": "AgentDeployment the tool is bound to.",
        },
        {
            "name": "Type",
            "type": "string",
            "jsonPath": ".spec.type",
            "description": "Tool type.",
        },
        {
            "name": "Tool",
            "type": "string",
            "jsonPath": ".status.toolName",
            "description": "Function name the model sees.",
            "priority": 1,
        },
        REASON_COLUMN,
        AGE_COLUMN,
    ),
    root_rules=(NAME_RULE,),
)

EVAL_SCHEDULE = Kind(
    kind="EvalSchedule",
    plural="evalschedules",
    short_names=("evs", "evalsched"),
    description="Scheduled evaluation of one AgentDeployment: a CronJob scoring its answers to a "
    "golden dataset (RAGAS with a judge, tool selection accuracy), and a PrometheusRule alerting "
    "when a score stays below its threshold.",
    spec=EvalScheduleSpec,
    status=EvalScheduleStatus,
    columns=(
        {
            "name": "Schedule",
            "type": "string",
            "jsonPath": ".spec.schedule",
            "description": "Cron schedule of the runs.",
        },
        {
            "name": "Last Run",
            "type": "date",
            "jsonPath": ".status.lastRunTime",
            "description": "When the last run finished.",
        },
        {
            "name": "Faithfulness",
            "type": "number",
            "jsonPath": ".status.scores.faithfulness",
            "description": "Faithfulness of the last run.",
        },
        {
            "name": "TSA",
            "type": "number",
            "jsonPath": ".status.scores.toolSelectionAccuracy",
            "description": "Tool selection accuracy of the last run.",
        },
        READY_COLUMN,
        {
            "name": "Agent",
            "type": "string",
            "jsonPath": ".spec.agentRef.name",
            "description": "AgentDeployment that is evaluated.",
            "priority": 1,
        },
        REASON_COLUMN,
        AGE_COLUMN,
    ),
    root_rules=(NAME_RULE,),
)

KINDS: tuple[Kind, ...] = (AGENT_DEPLOYMENT, TOOL_BINDING, EVAL_SCHEDULE)

__all__ = ["AGENT_DEPLOYMENT", "CATEGORY", "EVAL_SCHEDULE", "KINDS", "TOOL_BINDING", "Kind"]
