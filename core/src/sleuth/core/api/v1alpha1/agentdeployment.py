"""AgentDeployment: a model (served on GPUs by vLLM, or an existing endpoint) plus an agent service.

The spec's two parts have modules of their own: ``spec.model`` in
:mod:`~sleuth.core.api.v1alpha1.model` (serving defaults in
:mod:`~sleuth.core.api.v1alpha1.serving`), ``spec.agent`` in
:mod:`~sleuth.core.api.v1alpha1.agent`.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.v1alpha1.agent import AgentSpec
from sleuth.core.api.v1alpha1.autoscaling import WAKE_RULE, wake_problem
from sleuth.core.api.v1alpha1.common import SpecModel, StatusModel
from sleuth.core.api.v1alpha1.model import ModelSpec


class AgentDeploymentSpec(SpecModel):
    """Desired state of an AgentDeployment."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [WAKE_RULE]})

    model: ModelSpec = Field(description="The model server the agent plans with.")
    agent: AgentSpec = Field(
        default_factory=AgentSpec,
        description="The agent service.",
        json_schema_extra={"default": {}},
    )

    @model_validator(mode="after")
    def _check(self) -> AgentDeploymentSpec:
        problem = wake_problem(self.model.autoscaling, self.agent.request_timeout_seconds)
        if problem:
            raise ValueError(problem)
        return self


class BoundTool(SpecModel):
    """A tool offered to the agent, from a ToolBinding."""

    name: str = Field(description="Function name the model sees.")
    type: str = Field(description="Tool type: vector_search, sql_query or web_search.")
    binding: str = Field(description="Name of the ToolBinding.")
    endpoint: str = Field(description="URL of the tool service.")
    ready: bool = Field(description="Whether the tool service has ready replicas.")


class AgentDeploymentStatus(StatusModel):
    """Observed state of an AgentDeployment, written by the operator."""

    model: str | None = Field(default=None, description="Model name the agent sends.")
    model_endpoint: str | None = Field(default=None, description="URL of the model server.")
    agent_endpoint: str | None = Field(default=None, description="URL of the agent service.")
    agent_card_url: str | None = Field(
        default=None,
        description="URL of the agent's A2A card (absent when spec.agent.a2a.enabled is false).",
    )
    agent_audience: str | None = Field(
        default=None,
        description="The audience a ServiceAccount token must name to call the agent (a "
        "projected token's audience).",
    )
    tools: list[BoundTool] | None = Field(
        default=None, description="Tools bound through ToolBindings, in name order."
    )
    tool_names: str | None = Field(
        default=None, description="Comma-separated tool names (for kubectl get)."
    )
    model_replicas: int | None = Field(
        default=None,
        description="Available model server replicas (absent with spec.model.endpoint).",
    )
    model_desired_replicas: int | None = Field(
        default=None,
        description="Model server replicas wanted now: spec.model.replicas, or what its "
        "autoscaler asks for (0 while it sleeps).",
    )
    agent_replicas: int | None = Field(default=None, description="Available agent replicas.")
    agent_desired_replicas: int | None = Field(
        default=None,
        description="Agent replicas wanted now: spec.agent.replicas, or what its autoscaler "
        "asks for.",
    )


__all__ = [
    "AgentDeploymentSpec",
    "AgentDeploymentStatus",
    "BoundTool",
]
