"""What the operator's model server runs with: the pinned vLLM image, GPUs, the weight cache.

Serving fields have no schema defaults, so an endpoint-mode object never shows GPU settings it
does not use; the defaults here are applied by :class:`~sleuth.core.api.v1alpha1.model.ModelSpec`
(its ``effective_*`` helpers) and stated in each description.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.v1alpha1.common import SpecModel, exactly_one_message, exactly_one_rule

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


def gpu_resource_rules() -> list[JsonValue]:
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
            "x-kubernetes-validations": [exactly_one_rule("spec.model.cache", "claimName", "size")]
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
            raise ValueError(exactly_one_message("spec.model.cache", "claimName", "size"))
        return self


__all__ = [
    "DEFAULT_GPU_PRODUCT",
    "DEFAULT_MAX_MODEL_LEN",
    "DEFAULT_VLLM_IMAGE",
    "DEFAULT_VLLM_RELEASE",
    "GPU_RESOURCE",
    "SERVING_FIELDS",
    "GpuSpec",
    "ModelCache",
    "gpu_resource_rules",
]
