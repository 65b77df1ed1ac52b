"""ToolBinding: one tool (vector_search, sql_query or web_search) bound to one AgentDeployment.

The operator runs the tool in its own service (``sleuth tool-service``), with the tool's
credentials mounted there and nowhere else, behind a NetworkPolicy that admits only the agent.
Each type's settings have a module of their own: :mod:`~sleuth.core.api.v1alpha1.vectorsearch`,
:mod:`~sleuth.core.api.v1alpha1.sqlquery`, :mod:`~sleuth.core.api.v1alpha1.websearch`.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.fields import (
    BoundToolType,
    CacheTtlSeconds,
    ToolDescription,
    ToolName,
    ToolTimeoutSeconds,
)
from sleuth.core.api.v1alpha1.approval import ApprovalSpec, approval_rules, tables_rule_message
from sleuth.core.api.v1alpha1.common import (
    LocalObjectRef,
    Resources,
    SpecModel,
    StatusModel,
)
from sleuth.core.api.v1alpha1.limits import HttpLimitsSpec
from sleuth.core.api.v1alpha1.sqlquery import SqlQuerySpec
from sleuth.core.api.v1alpha1.vectorsearch import VectorSearchSpec
from sleuth.core.api.v1alpha1.websearch import WebSearchSpec

ToolType = BoundToolType

# type → the spec field holding that type's settings.
TYPE_FIELDS: dict[str, str] = {
    "vector_search": "vectorSearch",
    "sql_query": "sqlQuery",
    "web_search": "webSearch",
}


def _type_rules() -> list[JsonValue]:
    return [
        {
            "rule": f"(self.type == '{tool}') == has(self.{field})",
            "message": f"spec.{field} is required when type is {tool}, and forbidden otherwise",
        }
        for tool, field in TYPE_FIELDS.items()
    ]


_EMBEDDED_REPLICAS: dict[str, JsonValue] = {
    "rule": "!has(self.vectorSearch) || !has(self.vectorSearch.embedded) || self.replicas <= 1",
    "message": "spec.replicas: an embedded Qdrant store is opened by one process at a time; "
    "use at most 1 replica, or a Qdrant server (spec.vectorSearch.url)",
}


class ToolBindingSpec(SpecModel):
    """Desired state of a ToolBinding."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [*_type_rules(), _EMBEDDED_REPLICAS, *approval_rules()]
        }
    )

    agent_ref: LocalObjectRef = Field(
        description="The AgentDeployment (same namespace) this tool is offered to."
    )
    type: ToolType = Field(description="Kind of tool: vector_search, sql_query or web_search.")
    name: ToolName | None = Field(
        default=None,
        description="Function name the model sees; defaults to type. Unique within the agent.",
    )
    description: ToolDescription | None = Field(
        default=None,
        description="What the model reads to choose this tool. Defaults to the built-in "
        "description of the type, with its NOT-for exclusions.",
    )
    timeout_seconds: ToolTimeoutSeconds = Field(
        default=10, description="Timeout of one call of this tool."
    )
    cache_ttl_seconds: CacheTtlSeconds | None = Field(
        default=None,
        alias="cacheTTLSeconds",
        description="Result cache TTL; 0 disables caching. Defaults to the agent's "
        "toolCacheTTLSeconds.",
    )
    replicas: int = Field(default=1, ge=0, le=64, description="Tool service replicas.")
    max_concurrent_calls: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="Tool executions one replica runs at once (identical concurrent calls share "
        "one execution); beyond it a call is refused at once as busy (503 with Retry-After).",
    )
    limits: HttpLimitsSpec | None = Field(
        default=None,
        description="What one request to the tool service may carry and how long a client may "
        "take to send it; omit for the defaults.",
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="sleuth image running `sleuth tool-service`; defaults to the operator's "
        "workload image (its `--image`, the chart's `image` value), not the operator's own image.",
    )
    resources: Resources | None = Field(
        default=None, description="CPU and memory of each tool service pod."
    )
    vector_search: VectorSearchSpec | None = Field(
        default=None, description="Settings of a vector_search tool."
    )
    sql_query: SqlQuerySpec | None = Field(
        default=None, description="Settings of a sql_query tool."
    )
    web_search: WebSearchSpec | None = Field(
        default=None, description="Settings of a web_search tool."
    )
    approval: ApprovalSpec | None = Field(
        default=None,
        description="A person approves a call before the tool runs: always, or when a rule "
        "matches. The run pauses (A2A: input-required; the OpenAI API: an answer saying how to "
        "approve); only the caller who started it may decide, and only with the approve grant "
        "(spec.agent.access.callers[].grants). Omit: calls run as the model makes them.",
    )

    @model_validator(mode="after")
    def _settings_match_type(self) -> ToolBindingSpec:
        wire = self.to_wire()
        for tool, field in TYPE_FIELDS.items():
            if (self.type == tool) != (field in wire):
                raise ValueError(
                    f"spec.{field} is required when type is {tool}, and forbidden otherwise"
                )
        return self

    @model_validator(mode="after")
    def _embedded_single_replica(self) -> ToolBindingSpec:
        if self.vector_search and self.vector_search.embedded and self.replicas > 1:
            raise ValueError(str(_EMBEDDED_REPLICAS["message"]))
        return self

    @model_validator(mode="after")
    def _approval_fits_the_tool(self) -> ToolBindingSpec:
        match = self.approval.match if self.approval is not None else None
        if match is None or not match.tables:
            return self
        wrong_type = tables_rule_message(self.type)
        if wrong_type is not None:
            raise ValueError(wrong_type)
        allowed = set(self.sql_query.allowed_tables if self.sql_query else ())
        unknown = [t for t in match.tables if t not in allowed]
        if unknown:
            raise ValueError(
                f"spec.approval.match.tables: {', '.join(unknown)} not in "
                "spec.sqlQuery.allowedTables (a call could never read it)"
            )
        return self

    @property
    def tool_name(self) -> str:
        """The function name the model sees."""
        return self.name or self.type


class ToolBindingStatus(StatusModel):
    """Observed state of a ToolBinding, written by the operator."""

    tool_name: str | None = Field(default=None, description="Function name the model sees.")
    endpoint: str | None = Field(default=None, description="URL of the tool service.")


__all__ = [
    "TYPE_FIELDS",
    "ToolBindingSpec",
    "ToolBindingStatus",
    "ToolType",
]
