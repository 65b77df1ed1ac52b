"""``spec.agent`` of an AgentDeployment: the agent service and what it offers (A2A)."""

from __future__ import annotations

from pydantic import Field

from sleuth.core.api.fields import (
    CacheTtlSeconds,
    MaxConcurrentRequests,
    MaxIterations,
    RequestTimeoutSeconds,
    SystemPrompt,
)
from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.core.api.v1alpha1.autoscaling import AgentAutoscalingSpec
from sleuth.core.api.v1alpha1.common import Resources, SpecModel
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.api.v1alpha1.onlineeval import OnlineEvalSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.names import (
    ANSWER_RELEVANCY_SCORE,
    FAITHFULNESS_SCORE,
    SOURCE_LABEL,
    SOURCE_ONLINE,
)


class A2ASpec(SpecModel):
    """The agent as an A2A agent: its card at /.well-known/agent-card.json and its JSON-RPC task
    endpoint at /a2a, on the agent Service's http port beside the OpenAI API."""

    enabled: bool = Field(
        default=True, description="Serve the agent card and the A2A task endpoints."
    )
    description: str | None = Field(
        default=None,
        min_length=1,
        max_length=2000,
        description="What the agent is for, as its card tells other agents; default: a "
        "sentence naming its tools.",
    )


class AgentSpec(SpecModel):
    """The agent service: the ReAct loop behind an OpenAI-compatible HTTP API."""

    replicas: int = Field(
        default=1,
        ge=0,
        le=64,
        description="Agent service replicas; ignored when autoscaling is set.",
    )
    autoscaling: AgentAutoscalingSpec | None = Field(
        default=None,
        description="Scale the agent with its requests in flight (KEDA, or a "
        "HorizontalPodAutoscaler where the chart says KEDA is absent); the autoscaler then owns "
        "its replicas.",
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="sleuth image running `sleuth agent`; defaults to the operator's "
        "workload image (its `--image`, the chart's `image` value), not the operator's own image.",
    )
    max_iterations: MaxIterations = Field(
        default=5, description="Model turns allowed per request (1-10)."
    )
    parallel_tool_calls: bool | None = Field(
        default=None,
        description="Run independent tool calls of one turn concurrently. Defaults to true, "
        "except with the llama3_json parser, which emits one call per turn.",
    )
    system_prompt: SystemPrompt | None = Field(
        default=None,
        description="System prompt; omit for the built-in one (tool-error instructions included).",
    )
    tool_cache_ttl_seconds: CacheTtlSeconds = Field(
        default=300,
        alias="toolCacheTTLSeconds",
        description="TTL of the tool result cache keyed by (tool, arguments); 0 disables it.",
    )
    request_timeout_seconds: RequestTimeoutSeconds = Field(
        default=60, description="Timeout of one whole request (all iterations)."
    )
    max_concurrent_requests: MaxConcurrentRequests = Field(
        default=64,
        description="Requests served at once per replica; beyond it the API answers 429.",
    )
    online_eval: OnlineEvalSpec = Field(
        default_factory=OnlineEvalSpec,
        description="Online evaluation: a sampled share of answered requests scored by a judge "
        f"off the request path, exported as {FAITHFULNESS_SCORE} and "
        f'{ANSWER_RELEVANCY_SCORE}{{{SOURCE_LABEL}="{SOURCE_ONLINE}"}} on the agent\'s /metrics.',
        json_schema_extra={"default": {}},
    )
    limits: AgentLimitsSpec = Field(
        default_factory=AgentLimitsSpec,
        description="What one request may carry (body bytes, question, history) and how long a "
        "client may take to send it; one policy for /v1/query, /v1/chat/completions and /a2a.",
        json_schema_extra={"default": {}},
    )
    a2a: A2ASpec = Field(
        default_factory=A2ASpec,
        alias="a2a",  # not the alias generator's "a2A"
        description="The agent as an A2A agent (card, send, stream, get, cancel); its card's URL "
        "is in status.agentCardUrl.",
        json_schema_extra={"default": {}},
    )
    tracing: TracingSpec = Field(
        default_factory=TracingSpec,
        description="OpenTelemetry traces of the agent and its tool services (OTLP/HTTP): "
        "each field overrides the operator's default (the chart's tracing values).",
        json_schema_extra={"default": {}},
    )
    resources: Resources | None = Field(
        default=None, description="CPU and memory of each agent pod."
    )
    access: AccessSpec = Field(
        default_factory=AccessSpec,
        description="Who may call the agent (default deny: only this agent's EvalSchedules' "
        "Jobs unless callers are listed) and what each caller may see; every request leaves "
        "an audit record on the agent's output.",
        json_schema_extra={"default": {}},
    )


__all__ = ["A2ASpec", "AgentSpec"]
