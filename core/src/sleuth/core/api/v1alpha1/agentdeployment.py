"""AgentDeployment: a model (served on GPUs by vLLM, or an existing endpoint) plus an agent service.

``spec.model`` is either ``endpoint`` (an OpenAI-compatible server that already runs) or ``name``
(a Hugging Face model id that the operator serves with vLLM). Serving fields have no schema
defaults, so an endpoint-mode object never shows GPU settings it does not use; their defaults are
applied here (``effective_*`` helpers) and stated in each description.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.fields import (
    GUIDED_FORMAT_DESCRIPTION,
    TOOL_CALLING_DESCRIPTION,
    CacheTtlSeconds,
    GuidedFormat,
    MaxConcurrentRequests,
    MaxIterations,
    MaxModelLen,
    ModelName,
    RequestTimeoutSeconds,
    SystemPrompt,
    ToolCalling,
)
from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.core.api.v1alpha1.autoscaling import (
    ENDPOINT_AUTOSCALING,
    MODEL_RULES,
    WAKE_RULE,
    AgentAutoscalingSpec,
    ModelAutoscalingSpec,
    autoscaling_problem,
    wake_problem,
)
from sleuth.core.api.v1alpha1.common import Resources, SecretKeyRef, SpecModel, StatusModel
from sleuth.core.api.v1alpha1.contexts import (
    CONTEXT_LIMITS,
    context_excess,
    context_limit,
    context_rule,
)
from sleuth.core.api.v1alpha1.limits import AgentLimitsSpec
from sleuth.core.api.v1alpha1.onlineeval import (  # re-exported: spec.agent.onlineEval lives there
    OnlineEvalEmbeddings,
    OnlineEvalSpec,
)
from sleuth.core.api.v1alpha1.parsers import (
    FAMILIES,
    FAMILY_PARSERS,
    SINGLE_CALL_PARSERS,
    ToolCallParser,
    derive_tool_call_parser,
    family_rule,
    parser_mismatch,
    parser_rule,
)
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.api.v1alpha1.vllmargs import (
    ExtraArg,
    extra_args_rule,
    repeated_flag,
    widening_flag,
)
from sleuth.core.names import (
    ANSWER_RELEVANCY_SCORE,
    FAITHFULNESS_SCORE,
    SOURCE_LABEL,
    SOURCE_ONLINE,
)

# The default vLLM image: release v0.25.1 (past the security fixes of 0.11.1 and later), pinned
# by digest — the image digest Docker Hub shows for that tag
# (hub.docker.com/layers/vllm/vllm-openai/v0.25.1/images/sha256-f0b9a0dc...). The runtime pulls
# the digest; docs/install.md says where it comes from and how to check it.
DEFAULT_VLLM_RELEASE = "v0.25.1"
DEFAULT_VLLM_IMAGE = (
    "docker.io/vllm/vllm-openai"
    "@sha256:f0b9a0dc75a9fca3b6811e3279367b2d6a448055a000bfd13859587d74cef268"
)
DEFAULT_GPU_PRODUCT = "NVIDIA-H100-80GB-HBM3"
DEFAULT_MAX_MODEL_LEN = 16384
GPU_RESOURCE = "nvidia.com/gpu"

# Fields that only make sense when the operator serves the model.
SERVING_FIELDS: tuple[str, ...] = (
    "image",
    "quantization",
    "tensorParallelSize",
    "gpu",
    "maxModelLen",
    "toolCallParser",
    "extraArgs",
    "cache",
    "tokenSecretRef",
    "replicas",
    "resources",
)


_GPU_COUNT = (
    "(has(self.gpu) ? self.gpu.count : has(self.tensorParallelSize) ? self.tensorParallelSize : 1)"
)


def _gpu_resource_rules() -> list[JsonValue]:
    """CEL: ``spec.model.resources`` may name nvidia.com/gpu only as gpu.count, written as that
    integer (the comparison is of the text: the cost of parsing quantities here is beyond the
    apiserver's budget)."""
    rules: list[JsonValue] = []
    for field in ("limits", "requests"):
        where = f"self.resources.{field}"
        rules.append(
            {
                "rule": f"!has(self.resources) || !has({where}) || !('{GPU_RESOURCE}' in {where})"
                f" || string({where}['{GPU_RESOURCE}']) == string({_GPU_COUNT})",
                "message": f"spec.model.resources.{field}.{GPU_RESOURCE} contradicts "
                "spec.model.gpu.count (GPUs come from gpu.count: leave them out of resources)",
                "fieldPath": f".resources.{field}",
            }
        )
    return rules


class GpuSpec(SpecModel):
    """GPUs of each model server pod."""

    count: int = Field(
        ge=1,
        le=8,
        description="nvidia.com/gpu requested by each model server pod (1-8, one node). Must be "
        "a multiple of tensorParallelSize.",
    )
    product: str = Field(
        default=DEFAULT_GPU_PRODUCT,
        min_length=1,
        max_length=63,
        pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
        description="Value of the node label nvidia.com/gpu.product the pods must land on "
        f"(default {DEFAULT_GPU_PRODUCT}).",
    )


class ModelCache(SpecModel):
    """Where model weights are cached: an existing PersistentVolumeClaim, or a pod-local volume."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.claimName) != has(self.size)",
                    "message": "spec.model.cache: set exactly one of claimName and size",
                }
            ]
        }
    )

    claim_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=253,
        description="Name of an existing PersistentVolumeClaim mounted at "
        "/home/vllm/.cache/huggingface (ReadWriteMany or ReadOnlyMany when replicas > 1).",
    )
    size: str | None = Field(
        default=None,
        pattern=r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|K|M|G|T)?$",
        description="Size limit of a pod-local emptyDir cache, e.g. 200Gi; weights are downloaded "
        "again when a pod is replaced.",
    )

    @model_validator(mode="after")
    def _one(self) -> ModelCache:
        if (self.claim_name is None) == (self.size is None):
            raise ValueError("spec.model.cache: set exactly one of claimName and size")
        return self


class ModelSpec(SpecModel):
    """The model the agent plans with: an existing endpoint, or a model served with vLLM."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.endpoint) != has(self.name)",
                    "message": "spec.model: set exactly one of endpoint (use an existing "
                    "OpenAI-compatible server) and name (serve a model with vLLM)",
                },
                {
                    "rule": "!has(self.endpoint) || has(self.servedModelName)",
                    "message": "spec.model.servedModelName is required with spec.model.endpoint: "
                    "it is the model name sent to that server",
                },
                {
                    "rule": "!has(self.endpoint) || ("
                    + " && ".join(f"!has(self.{f})" for f in SERVING_FIELDS)
                    + ")",
                    "message": "spec.model.endpoint uses an existing server: serving fields ("
                    + ", ".join(SERVING_FIELDS)
                    + ") must not be set",
                },
                {
                    "rule": "!has(self.gpu) || self.gpu.count % (has(self.tensorParallelSize) "
                    "? self.tensorParallelSize : 1) == 0",
                    "message": "spec.model.gpu.count must be a multiple of "
                    "spec.model.tensorParallelSize",
                },
                {
                    "rule": family_rule(),
                    "message": "spec.model.toolCallParser is required: the family of "
                    "spec.model.name is not one sleuth knows ("
                    + ", ".join(f.label for f in FAMILIES)
                    + "); or set toolCalling: guided",
                },
                {
                    "rule": "!has(self.guidedFormat) || (has(self.toolCalling) && "
                    "self.toolCalling == 'guided')",
                    "message": "spec.model.guidedFormat is used only with toolCalling: guided",
                },
                parser_rule(),
                context_rule(),
                extra_args_rule(),
                *MODEL_RULES,
                *_gpu_resource_rules(),
            ]
        }
    )

    endpoint: str | None = Field(
        default=None,
        max_length=2048,
        pattern=r"^https?://[^\s/]+(/\S*)?$",
        description="Base URL of an existing OpenAI-compatible server, including /v1 "
        "(e.g. http://vllm.models:8000/v1). Exclusive with name.",
    )
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Secret key holding the model server's API key. With endpoint: the key "
        "that server needs, if any. With name: vLLM requires it (VLLM_API_KEY) as a bearer "
        "token from every client; the agent and the eval Jobs send it.",
    )
    tool_calling: ToolCalling | None = Field(
        default=None, description=TOOL_CALLING_DESCRIPTION + " Default native."
    )
    guided_format: GuidedFormat | None = Field(
        default=None, description=GUIDED_FORMAT_DESCRIPTION + " Default json_schema."
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9._-]+)?$",
        description="Hugging Face model id served with vLLM, e.g. "
        "meta-llama/Llama-3.1-70B-Instruct. Exclusive with endpoint.",
    )
    served_model_name: ModelName | None = Field(
        default=None,
        description="Model name clients send (vLLM --served-model-name). Defaults to name; "
        "required with endpoint.",
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="vLLM container image, pinned. Default: the operator's --model-image "
        f"(built in: {DEFAULT_VLLM_IMAGE}).",
    )
    quantization: Literal["fp8", "awq", "gptq", "bitsandbytes", "compressed-tensors"] | None = (
        Field(
            default=None,
            description="Weight quantization passed to vLLM --quantization, e.g. fp8. Omit for "
            "the checkpoint's own precision.",
        )
    )
    tensor_parallel_size: int | None = Field(
        default=None,
        ge=1,
        le=8,
        description="GPUs one model replica is sharded across (--tensor-parallel-size, default 1).",
    )
    gpu: GpuSpec | None = Field(
        default=None,
        description="GPUs per model server pod and the GPU product to schedule on. Defaults to "
        "tensorParallelSize GPUs of the default product.",
    )
    max_model_len: MaxModelLen | None = Field(
        default=None,
        description=f"Context length in tokens (--max-model-len, default {DEFAULT_MAX_MODEL_LEN}, "
        "or the model's context when shorter; 16k covers 5-10 ReAct turns). Refused beyond the "
        "context of a known family ("
        + ", ".join(f"{c.label} {c.tokens}" for c in CONTEXT_LIMITS)
        + ").",
    )
    tool_call_parser: ToolCallParser | None = Field(
        default=None,
        description="vLLM --tool-call-parser. Derived from the model family when omitted ("
        + ", ".join(f"{f.label} {f.parser}" for f in FAMILIES)
        + "); required for any other family, and refused when the family's own chat template "
        "writes another format (unless extraArgs brings a --chat-template).",
    )
    extra_args: list[ExtraArg] | None = Field(
        default=None,
        max_length=64,
        description="Extra vLLM command-line arguments appended after the rendered ones, e.g. "
        "[--gpu-memory-utilization=0.92]; at most 4096 characters each, and none of the flags "
        "the operator sets from other fields (--model, --served-model-name, "
        "--tensor-parallel-size, --max-model-len, --quantization, --enable-auto-tool-choice, "
        "--tool-call-parser, --host, --port), nor one that widens what vLLM may do "
        '(--trust-remote-code, --allowed-local-media-path, ...: docs/install.md, "Security '
        'model").',
    )
    cache: ModelCache | None = Field(
        default=None, description="Model weight cache. Omit for no cache volume."
    )
    token_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Secret key holding a Hugging Face token (set as HF_TOKEN in the model "
        "server only), for gated models.",
    )
    replicas: int | None = Field(
        default=None,
        ge=0,
        le=64,
        description="Model server replicas (default 1). Exclusive with autoscaling.",
    )
    resources: Resources | None = Field(
        default=None,
        description="CPU and memory of each model server pod; nvidia.com/gpu comes from gpu.count.",
    )
    autoscaling: ModelAutoscalingSpec | None = Field(
        default=None,
        description="Scale the model server with its queue through KEDA, down to zero when "
        "idle (minReplicas 0); the autoscaler then owns its replicas. Exclusive with replicas "
        "and endpoint.",
    )

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        # The same rules as the CRD's CEL, for objects that reach the operator another way.
        self._check_guided()
        if (self.endpoint is None) == (self.name is None):
            raise ValueError("spec.model: set exactly one of endpoint and name")
        if self.endpoint is not None:
            if self.autoscaling is not None:
                raise ValueError(ENDPOINT_AUTOSCALING)
            if self.served_model_name is None:
                raise ValueError("spec.model.servedModelName is required with spec.model.endpoint")
            wire = self.to_wire()
            used = [f for f in SERVING_FIELDS if f in wire]
            if used:
                raise ValueError(f"spec.model.{used[0]} must not be set with spec.model.endpoint")
            return self
        if self.effective_gpu.count % self.effective_tensor_parallel_size:
            raise ValueError(
                "spec.model.gpu.count must be a multiple of spec.model.tensorParallelSize"
            )
        if self.effective_parser is None and self.tool_calling != "guided":
            raise ValueError(
                "spec.model.toolCallParser is required: the family of spec.model.name is "
                "unknown (or set spec.model.toolCalling: guided)"
            )
        assert self.name is not None  # serving
        problems = [
            self.tool_call_parser
            and parser_mismatch(self.name, self.tool_call_parser, self.extra_args),
            self.max_model_len and context_excess(self.name, self.max_model_len),
            self.extra_args and repeated_flag(self.extra_args),
            self.extra_args and widening_flag(self.extra_args),
            autoscaling_problem(self.replicas, self.autoscaling),
            self._gpu_resources_problem(),
        ]
        for problem in problems:
            if problem:
                raise ValueError(problem)
        return self

    def _gpu_resources_problem(self) -> str | None:
        count = self.effective_gpu.count
        for field in ("limits", "requests"):
            found = getattr(self.resources, field, None) or {}
            if GPU_RESOURCE in found and str(found[GPU_RESOURCE]) != str(count):
                return (
                    f"spec.model.resources.{field}.{GPU_RESOURCE}: {found[GPU_RESOURCE]} "
                    f"contradicts spec.model.gpu.count ({count}); GPUs come from gpu.count: "
                    "leave them out of resources"
                )
        return None

    def _check_guided(self) -> None:
        if self.guided_format is not None and self.tool_calling != "guided":
            raise ValueError("spec.model.guidedFormat is used only with toolCalling: guided")

    # Effective values, with the operator-side defaults applied.
    @property
    def serves(self) -> bool:
        """True when the operator runs a model server (``name`` set)."""
        return self.name is not None

    @property
    def effective_served_name(self) -> str:
        return self.served_model_name or self.name or ""

    @property
    def effective_tensor_parallel_size(self) -> int:
        return self.tensor_parallel_size or 1

    @property
    def effective_gpu(self) -> GpuSpec:
        return self.gpu or GpuSpec(count=self.effective_tensor_parallel_size)

    @property
    def effective_max_model_len(self) -> int:
        """``maxModelLen``, else the default lowered to the family's context when shorter."""
        if self.max_model_len is not None:
            return self.max_model_len
        limit = context_limit(self.name or "")
        return min(DEFAULT_MAX_MODEL_LEN, limit.tokens if limit else DEFAULT_MAX_MODEL_LEN)

    @property
    def effective_parser(self) -> ToolCallParser | None:
        if self.tool_call_parser is not None:
            return self.tool_call_parser
        return derive_tool_call_parser(self.name) if self.name else None


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
    "DEFAULT_GPU_PRODUCT",
    "DEFAULT_MAX_MODEL_LEN",
    "DEFAULT_VLLM_IMAGE",
    "DEFAULT_VLLM_RELEASE",
    "FAMILY_PARSERS",
    "SINGLE_CALL_PARSERS",
    "A2ASpec",
    "AgentAutoscalingSpec",
    "AgentDeploymentSpec",
    "AgentDeploymentStatus",
    "AgentSpec",
    "BoundTool",
    "GpuSpec",
    "ModelAutoscalingSpec",
    "ModelCache",
    "ModelSpec",
    "OnlineEvalEmbeddings",
    "OnlineEvalSpec",
    "ToolCallParser",
    "derive_tool_call_parser",
]
