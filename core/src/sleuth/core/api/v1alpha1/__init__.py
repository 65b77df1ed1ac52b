"""API version ``sleuth.dev/v1alpha1``: AgentDeployment, ToolBinding and EvalSchedule."""

from sleuth.core.api.v1alpha1.agent import AgentSpec
from sleuth.core.api.v1alpha1.agentdeployment import (
    AgentDeploymentSpec,
    AgentDeploymentStatus,
    BoundTool,
)
from sleuth.core.api.v1alpha1.common import (
    API_VERSION,
    GROUP,
    VERSION,
    Condition,
    LocalObjectRef,
    Resources,
    SecretKeyRef,
)
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec, EvalScheduleStatus
from sleuth.core.api.v1alpha1.model import ModelSpec
from sleuth.core.api.v1alpha1.parsers import derive_tool_call_parser
from sleuth.core.api.v1alpha1.serving import GpuSpec, ModelCache
from sleuth.core.api.v1alpha1.sqlquery import SqlQuerySpec, SqlTemplate
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec, ToolBindingStatus
from sleuth.core.api.v1alpha1.vectorsearch import VectorSearchSpec
from sleuth.core.api.v1alpha1.websearch import WebSearchSpec

__all__ = [
    "API_VERSION",
    "GROUP",
    "VERSION",
    "AgentDeploymentSpec",
    "AgentDeploymentStatus",
    "AgentSpec",
    "BoundTool",
    "Condition",
    "EvalScheduleSpec",
    "EvalScheduleStatus",
    "GpuSpec",
    "LocalObjectRef",
    "ModelCache",
    "ModelSpec",
    "Resources",
    "SecretKeyRef",
    "SqlQuerySpec",
    "SqlTemplate",
    "ToolBindingSpec",
    "ToolBindingStatus",
    "VectorSearchSpec",
    "WebSearchSpec",
    "derive_tool_call_parser",
]
