"""``spec.model`` of an AgentDeployment: an existing endpoint, or a model served with vLLM.

``spec.model`` is either ``endpoint`` (an OpenAI-compatible server that already runs) or ``name``
(a Hugging Face model id that the operator serves with vLLM). Serving fields have no schema
defaults, so an endpoint-mode object never shows GPU settings it does not use; their defaults are
applied here (``effective_*`` helpers) and stated in each description.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.fields import (
    GUIDED_FORMAT_DESCRIPTION,
    TOOL_CALLING_DESCRIPTION,
    GuidedFormat,
    MaxModelLen,
    ModelName,
    ToolCalling,
)
from sleuth.core.api.v1alpha1.autoscaling import (
    ENDPOINT_AUTOSCALING,
    MODEL_RULES,
    ModelAutoscalingSpec,
    autoscaling_problem,
)
from sleuth.core.api.v1alpha1.common import URL_PATTERN, Resources, SecretKeyRef, SpecModel
from sleuth.core.api.v1alpha1.contexts import (
    CONTEXT_LIMITS,
    context_excess,
    context_limit,
    context_rule,
)
from sleuth.core.api.v1alpha1.parsers import (
    FAMILIES,
    ToolCallParser,
    derive_tool_call_parser,
    family_rule,
    parser_mismatch,
    parser_rule,
)
from sleuth.core.api.v1alpha1.serving import (
    DEFAULT_MAX_MODEL_LEN,
    DEFAULT_VLLM_IMAGE,
    GPU_RESOURCE,
    SERVING_FIELDS,
    GpuSpec,
    ModelCache,
    gpu_resource_rules,
)
from sleuth.core.api.v1alpha1.vllmargs import (
    ExtraArg,
    extra_args_rule,
    repeated_flag,
    widening_flag,
)


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
                *gpu_resource_rules(),
            ]
        }
    )

    endpoint: str | None = Field(
        default=None,
        max_length=2048,
        pattern=URL_PATTERN,
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


__all__ = ["ModelSpec"]
