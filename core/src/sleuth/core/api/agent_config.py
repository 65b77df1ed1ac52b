"""The agent service's configuration file: what the operator renders into the agent's ConfigMap.

The file is YAML or JSON with camelCase keys (Python attribute names are snake_case; both are
accepted when parsing, camelCase is what :meth:`AgentConfig.to_file_dict` writes). Unknown keys are
rejected, and a validation error names the offending field. The TTL keys are read as
``toolCacheTTLSeconds``/``cacheTTLSeconds`` (the CRD spelling) or ``toolCacheTtlSeconds``/
``cacheTtlSeconds`` (the spelling written). The sections the file shares with the CRD spec are
the spec's own models: ``limits`` is ``spec.agent.limits``
(:class:`~sleuth.core.api.v1alpha1.limits.AgentLimitsSpec`), ``onlineEval`` and ``a2a`` extend
the spec's settings with what the operator resolves (the judge's and the embeddings server's
addresses, the agent's public URL). The other fields the file shares with the specs take their
type and bounds from :mod:`sleuth.core.api.fields`, the CRD's, so that every spec the apiserver
accepts renders into a file the agent accepts (seconds are whole numbers on both sides).

Example (every field but ``model`` and ``tools`` has a default)::

    model:
      endpoint: http://vllm-llama:8000/v1      # OpenAI-compatible base URL (ends in /v1)
      servedModelName: meta-llama/Llama-3.1-70B-Instruct
      timeoutSeconds: 30
      toolCalling: native                       # or "guided": a JSON Schema forces the format
    planner:
      mode: llm                                 # or "router": deterministic, no LLM
      fallbackToRouter: true                    # degrade to the router when the model is down
    maxIterations: 5
    parallelToolCalls: true
    toolCacheTTLSeconds: 300
    requestTimeoutSeconds: 60
    maxConcurrentRequests: 64
    tools:
      - name: sql_query
        type: sql_query
        endpoint: http://tool-sql-query:8080   # remote tool service; omit for in-process
        timeoutSeconds: 5
      - name: vector_search
        type: vector_search
        endpoint: http://tool-vector-search:8080
    onlineEval:
      sampleRate: 0.05                          # score 5 % of answered requests online
      judge:                                    # default: the model above
        endpoint: http://vllm-judge:8000/v1
        model: judge
      embeddings: {source: local}               # answer relevancy (default: the judge's)

Load a file with :func:`load_agent_config`; the agent service reads the path from
``SLEUTH_AGENT_CONFIG`` (see ``sleuth.agent.settings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import AliasChoices, AnyHttpUrl, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from sleuth.core.api.access_config import AccessConfig
from sleuth.core.api.fields import (
    GUIDED_FORMAT_DESCRIPTION,
    MAX_ITERATIONS,
    TOOL_CALLING_DESCRIPTION,
    BoundToolType,
    CacheTtlSeconds,
    GuidedFormat,
    MaxConcurrentRequests,
    MaxIterations,
    MaxModelLen,
    ModelCallTimeoutSeconds,
    ModelName,
    RequestTimeoutSeconds,
    SystemPrompt,
    ToolCalling,
    ToolDescription,
    ToolName,
    ToolTimeoutSeconds,
)
from sleuth.core.api.v1alpha1.agent import A2ASpec
from sleuth.core.api.v1alpha1.approval import ApprovalSpec
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.api.v1alpha1.onlineeval import EmbeddingsChoice, OnlineEvalSettings

ToolType = Literal[BoundToolType, "custom"]

MAX_ITERATIONS_LIMIT = MAX_ITERATIONS


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )


class ModelEndpointConfig(_Model):
    """The OpenAI-compatible chat completions server the agent plans with (vLLM or any other)."""

    endpoint: AnyHttpUrl = Field(
        description=(
            "Base URL of the OpenAI-compatible API, including the /v1 suffix, "
            "e.g. http://vllm-llama:8000/v1."
        )
    )
    served_model_name: ModelName = Field(
        description="Model name sent in the `model` field of every request (vLLM's "
        "--served-model-name).",
    )
    timeout_seconds: ModelCallTimeoutSeconds = Field(
        default=30, description="Timeout of one model call, in seconds."
    )
    stream: bool = Field(
        default=True,
        description="Stream completions (server-sent events) so time to first token is measured.",
    )
    temperature: float = Field(default=0.0, ge=0, le=2, description="Sampling temperature.")
    max_tokens: int = Field(
        default=1024, ge=1, le=32768, description="Upper bound on tokens generated per model call."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of an environment variable holding the API key, if the server needs "
        "one (the key itself never appears in this file).",
    )
    max_model_len: MaxModelLen | None = Field(
        default=None,
        description="The server's context length in tokens. When set, a request whose prompt is "
        "estimated (UTF-8 bytes / 4) above maxModelLen - maxTokens is refused with 413 before "
        "the model is called.",
    )
    tool_calling: ToolCalling = Field(default="native", description=TOOL_CALLING_DESCRIPTION)
    guided_format: GuidedFormat = Field(
        default="json_schema", description=GUIDED_FORMAT_DESCRIPTION
    )
    wake_wait_seconds: int | None = Field(
        default=None,
        ge=0,
        le=3600,
        description="Set when the model server may sleep at zero replicas "
        "(spec.model.autoscaling): how long a request that finds it asleep waits for it to wake "
        "(counted in sleuth_agent_requests_waiting_for_model, the signal that wakes it) before "
        "the router answers; unset: no wait.",
    )


class PlannerConfig(_Model):
    """How the agent decides which tools to call."""

    mode: Literal["llm", "router"] = Field(
        default="llm",
        description="`llm`: function calling (model.toolCalling) against the model endpoint. "
        "`router`: a "
        "deterministic keyword router with no LLM (answers say so).",
    )
    fallback_to_router: bool = Field(
        default=True,
        description="When the model endpoint is unreachable, degrade to the deterministic router "
        "instead of failing the request.",
    )


class ToolConfig(_Model):
    """One tool offered to the model: remote (a tool service URL) or in-process."""

    name: ToolName = Field(description="Function name the model sees; unique within the agent.")
    type: ToolType = Field(
        description="Kind of tool: vector_search (Qdrant), sql_query (PostgreSQL), web_search, "
        "or custom (in-process, built by `factory`)."
    )
    description: ToolDescription | None = Field(
        default=None,
        description="Override of the description the model sees. Say what the tool is for and "
        "what it is NOT for.",
    )
    endpoint: AnyHttpUrl | None = Field(
        default=None,
        description="Base URL of the remote tool service serving this tool. Omit to run the tool "
        "in-process.",
    )
    factory: str | None = Field(
        default=None,
        pattern=r"^[\w.]+:[\w.]+$",
        description="For in-process tools: import path `package.module:callable` returning a "
        "Tool. Defaults to the built-in implementation of `type`.",
    )
    timeout_seconds: ToolTimeoutSeconds = Field(
        default=10, description="Timeout of one call of this tool, in seconds."
    )
    cache_ttl_seconds: CacheTtlSeconds | None = Field(
        default=None,
        validation_alias=AliasChoices("cacheTTLSeconds", "cacheTtlSeconds", "cache_ttl_seconds"),
        description="Result cache TTL for this tool, in seconds; 0 disables caching. Defaults to "
        "toolCacheTTLSeconds.",
    )

    approval: ApprovalSpec | None = Field(
        default=None,
        description="A person approves a call before it runs (the ToolBinding's spec.approval): "
        "always, or when a rule matches.",
    )

    @model_validator(mode="after")
    def _approval_fits_the_tool(self) -> ToolConfig:
        match = self.approval.match if self.approval is not None else None
        if match is not None and match.tables and self.type not in ("sql_query", "custom"):
            raise ValueError(
                f"tools[{self.name}].approval.match.tables is only for sql_query tools"
            )
        return self

    @model_validator(mode="after")
    def _endpoint_or_factory(self) -> ToolConfig:
        if self.endpoint is not None and self.factory is not None:
            raise ValueError("endpoint and factory are exclusive: a tool is remote or in-process")
        if self.type == "custom" and self.endpoint is None and self.factory is None:
            raise ValueError("a custom tool needs an endpoint or a factory")
        return self


class OnlineEvalJudgeConfig(_Model):
    """The OpenAI-compatible server and model that score sampled answers."""

    endpoint: AnyHttpUrl = Field(description="Base URL of the judge's API, including /v1.")
    model: ModelName = Field(description="Model name sent to the judge.")
    api_key_env: str | None = Field(
        default=None,
        description="Name of an environment variable holding the judge's API key, if needed.",
    )


class OnlineEvalEmbeddingsConfig(EmbeddingsChoice):
    """Where answer relevancy gets its embeddings: the spec's choice, its server resolved."""

    endpoint: AnyHttpUrl | None = Field(
        default=None, description="Base URL (with /v1) of the embeddings server, for `endpoint`."
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of an environment variable holding the API key of `endpoint`; "
        "without it `endpoint` is called with the judge's key.",
    )

    @model_validator(mode="after")
    def _endpoint_for_endpoint(self) -> OnlineEvalEmbeddingsConfig:
        if (self.source == "endpoint") != (self.endpoint is not None):
            raise ValueError(
                "embeddings.endpoint is set exactly when embeddings.source is endpoint"
            )
        return self


class OnlineEvalConfig(OnlineEvalSettings):
    """Online evaluation: a sampled share of answered requests scored off the request path.

    Sampled answers wait in a bounded queue; a few workers score faithfulness and answer
    relevancy with the judge (the metrics of ``sleuth eval ragas``) and export the mean of the
    last ``window`` scores. A full queue drops the sample; a failing judge only counts errors.
    The settings are the spec's (:class:`~sleuth.core.api.v1alpha1.onlineeval.OnlineEvalSettings`);
    the judge and the embeddings come resolved.
    """

    judge: OnlineEvalJudgeConfig | None = Field(
        default=None, description="The judge; defaults to the agent's own model server and model."
    )
    embeddings: OnlineEvalEmbeddingsConfig = Field(
        default_factory=OnlineEvalEmbeddingsConfig,
        description="Embeddings for answer relevancy (default: the judge's /embeddings).",
    )


class A2AConfig(A2ASpec):
    """The agent as an A2A agent: its card at ``/.well-known/agent-card.json``, its JSON-RPC
    endpoint (send, stream, get, cancel) at ``/a2a``, beside the OpenAI API on the same port.
    The spec's settings (:class:`~sleuth.core.api.v1alpha1.agent.A2ASpec`) and the URL
    the operator gives it."""

    public_url: AnyHttpUrl | None = Field(
        default=None,
        description="Base URL other agents reach this agent at; the card names "
        "`<publicUrl>/a2a`. Default: the base URL the card was asked at.",
    )
    task_ttl_seconds: int = Field(
        default=3600,
        ge=60,
        le=86400,
        description="A task is forgotten this long after its last update.",
    )
    max_stored_tasks: int = Field(
        default=1000,
        ge=1,
        le=100000,
        description="Tasks kept per replica; beyond it the least recently updated is forgotten.",
    )


class ApprovalsConfig(_Model):
    """How many runs may wait for a person's approval at once (per replica, in memory)."""

    max_pending_per_caller: int = Field(
        default=8,
        ge=1,
        le=1000,
        description="Paused runs one caller may have; beyond it a call that needs approval is "
        "refused at once (the model is told, and answers with what it has).",
    )
    max_pending: int = Field(
        default=256, ge=1, le=100000, description="Paused runs of all callers together."
    )


class AgentConfig(_Model):
    """The whole configuration file of one agent service."""

    model: ModelEndpointConfig = Field(description="The model server the agent plans with.")
    planner: PlannerConfig = Field(default_factory=PlannerConfig, description="Planner settings.")
    tools: list[ToolConfig] = Field(
        default_factory=list, description="Tools offered to the model, keyed by name."
    )
    max_iterations: MaxIterations = Field(
        default=5,
        description="Model turns allowed per request (1-10); at the limit the agent answers "
        "with the evidence it has and says so.",
    )
    parallel_tool_calls: bool = Field(
        default=True,
        description="Run independent tool calls of one turn concurrently. Turn off for "
        "tool-call parsers that cannot emit parallel calls (e.g. llama3_json).",
    )
    max_parallel_tool_calls: int = Field(
        default=8, ge=1, le=64, description="Upper bound on tool calls running at once per request."
    )
    system_prompt: SystemPrompt | None = Field(
        default=None,
        description="System prompt; defaults to the built-in prompt (tool-error and "
        "unavailable-tool instructions included).",
    )
    tool_cache_ttl_seconds: CacheTtlSeconds = Field(
        default=300,
        validation_alias=AliasChoices(
            "toolCacheTTLSeconds", "toolCacheTtlSeconds", "tool_cache_ttl_seconds"
        ),
        description="Default TTL of the tool result cache keyed by (tool, canonical arguments); "
        "0 disables it.",
    )
    request_timeout_seconds: RequestTimeoutSeconds = Field(
        default=60, description="Timeout of a whole request (all iterations)."
    )
    max_concurrent_requests: MaxConcurrentRequests = Field(
        default=64,
        description="Requests served at once; beyond it the API answers 429 with Retry-After.",
    )
    online_eval: OnlineEvalConfig = Field(
        default_factory=OnlineEvalConfig,
        description="Online evaluation of a sampled share of answered requests.",
    )
    limits: AgentLimitsSpec = Field(
        default_factory=AgentLimitsSpec,
        description="Request size and client timing limits of the HTTP API.",
    )
    a2a: A2AConfig = Field(
        default_factory=A2AConfig,
        alias="a2a",  # not the alias generator's "a2A"
        description="The agent card and the A2A task endpoints.",
    )
    access: AccessConfig | None = Field(
        default=None,
        description="Who may call the agent and what each caller may see (default deny; "
        "sleuth.core.api.access_config). Absent: `sleuth agent` listens on loopback only.",
    )
    approvals: ApprovalsConfig = Field(
        default_factory=ApprovalsConfig,
        description="Bounds on runs waiting for a person's approval (tools[].approval).",
    )

    @model_validator(mode="after")
    def _unique_tool_names(self) -> AgentConfig:
        seen: set[str] = set()
        for tool in self.tools:
            if tool.name in seen:
                raise ValueError(f"tools: duplicate tool name {tool.name!r}")
            seen.add(tool.name)
        return self

    def to_file_dict(self) -> dict[str, Any]:
        """The camelCase, JSON-compatible form written into the ConfigMap."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_agent_config(text: str) -> AgentConfig:
    """Parse YAML or JSON text (JSON is YAML) into a validated :class:`AgentConfig`."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("agent configuration must be a mapping at the top level")
    return AgentConfig.model_validate(data)


def load_agent_config(path: str | Path) -> AgentConfig:
    """Read and validate the configuration file at ``path``."""
    return parse_agent_config(Path(path).read_text(encoding="utf-8"))


__all__ = [
    "MAX_ITERATIONS_LIMIT",
    "AgentConfig",
    "ApprovalsConfig",
    "ModelEndpointConfig",
    "OnlineEvalConfig",
    "OnlineEvalEmbeddingsConfig",
    "OnlineEvalJudgeConfig",
    "PlannerConfig",
    "ToolConfig",
    "ToolType",
    "load_agent_config",
    "parse_agent_config",
]
