"""The spec models: derived defaults, and refusals that name the field."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sleuth.core.api.v1alpha1 import (
    AgentDeploymentSpec,
    ModelSpec,
    ToolBindingSpec,
    derive_tool_call_parser,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("name", "parser"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "llama3_json"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3_json"),
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3_json"),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4_pythonic"),
        ("Qwen/Qwen2.5-72B-Instruct", "hermes"),
        ("Qwen/Qwen3-32B", "hermes"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("google/gemma-2-9b-it", None),
    ],
)
def test_tool_call_parser_is_derived_from_the_family(name: str, parser: str | None) -> None:
    assert derive_tool_call_parser(name) == parser


def _served(**model: Any) -> dict[str, Any]:
    return {"model": {"name": "meta-llama/Llama-3.1-70B-Instruct", **model}}


def test_served_model_defaults() -> None:
    spec = AgentDeploymentSpec.model_validate(_served(tensorParallelSize=4))
    assert spec.model.effective_gpu.count == 4
    assert spec.model.effective_gpu.product == "NVIDIA-H100-80GB-HBM3"
    assert spec.model.effective_parser == "llama3_json"
    assert spec.model.effective_served_name == "meta-llama/Llama-3.1-70B-Instruct"
    assert spec.agent.max_iterations == 5


@pytest.mark.parametrize(
    ("model", "field"),
    [
        ({"name": "google/gemma-2-9b-it"}, "toolCallParser"),
        ({"name": "x/Llama-3-8B", "endpoint": "http://a/v1"}, "endpoint and name"),
        ({"endpoint": "http://a/v1"}, "servedModelName"),
        ({"endpoint": "http://a/v1", "servedModelName": "m", "gpu": {"count": 1}}, "gpu"),
        ({"name": "x/Llama-3-8B", "gpu": {"count": 3}, "tensorParallelSize": 2}, "gpu.count"),
        ({"name": "x/Llama-3-8B", "cache": {}}, "cache"),
    ],
)
def test_invalid_model_names_the_field(model: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        ModelSpec.model_validate(model)
    assert field in str(err.value)


def _binding(**extra: Any) -> dict[str, Any]:
    return {"agentRef": {"name": "contracts"}, **extra}


def test_tool_binding_type_and_settings_must_match() -> None:
    with pytest.raises(ValidationError, match=r"spec\.sqlQuery is required"):
        ToolBindingSpec.model_validate(_binding(type="sql_query"))
    with pytest.raises(ValidationError, match="allowExternal must be true"):
        ToolBindingSpec.model_validate(
            _binding(type="web_search", webSearch={"url": "http://s:8080", "allowExternal": False})
        )
    ok = ToolBindingSpec.model_validate(
        _binding(
            type="sql_query",
            sqlQuery={
                "connectionSecretRef": {"name": "db", "key": "uri"},
                "allowedTables": ["contracts"],
            },
            cacheTTLSeconds=0,
        )
    )
    assert ok.tool_name == "sql_query"
    assert ok.cache_ttl_seconds == 0
    assert ok.to_wire()["cacheTTLSeconds"] == 0


@pytest.mark.parametrize(
    ("name", "parser", "field"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "hermes", "hermes does not fit Llama 3.x"),
        ("Qwen/Qwen2.5-72B-Instruct", "mistral", "mistral does not fit Qwen2.5"),
        (
            "meta-llama/Llama-4-Scout-17B-16E-Instruct",
            "llama3_json",
            "llama3_json does not fit Llama 4",
        ),
        ("mistralai/Mistral-7B-Instruct-v0.3", "hermes", "hermes does not fit Mistral"),
    ],
)
def test_a_parser_that_contradicts_the_family_is_refused(
    name: str, parser: str, field: str
) -> None:
    with pytest.raises(ValidationError, match=f"spec.model.toolCallParser: {field}"):
        ModelSpec.model_validate({"name": name, "toolCallParser": parser})


@pytest.mark.parametrize(
    ("name", "parser", "extra"),
    [
        ("meta-llama/Llama-3.2-3B-Instruct", "pythonic", []),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4_json", []),
        ("NousResearch/Hermes-3-Llama-3.1-70B", "hermes", []),  # a fine-tune in its own format
        ("NousResearch/Hermes-2-Pro-Mistral-7B", "hermes", []),
        ("Salesforce/Llama-xLAM-2-70B-fc-r", "xlam", []),
        ("google/gemma-2-9b-it", "pythonic", []),  # unknown family: the user's choice
        ("meta-llama/Llama-3.1-8B-Instruct", "hermes", ["--chat-template=/t/hermes.jinja"]),
    ],
)
def test_parsers_that_fit_are_accepted(name: str, parser: str, extra: list[str]) -> None:
    spec = ModelSpec.model_validate({"name": name, "toolCallParser": parser, "extraArgs": extra})
    assert spec.effective_parser == parser


def test_fine_tunes_derive_their_own_parser() -> None:
    assert derive_tool_call_parser("NousResearch/Hermes-3-Llama-3.1-70B") == "hermes"
    assert derive_tool_call_parser("Qwen/Qwen3-Coder-30B-A3B-Instruct") == "qwen3_coder"


def test_max_model_len_stays_within_the_family_context() -> None:
    with pytest.raises(ValidationError, match=r"spec.model.maxModelLen: 262144 is beyond"):
        ModelSpec.model_validate(
            {"name": "meta-llama/Llama-3.1-8B-Instruct", "maxModelLen": 262144}
        )
    ok = ModelSpec.model_validate(
        {"name": "meta-llama/Llama-3.1-8B-Instruct", "maxModelLen": 131072}
    )
    assert ok.effective_max_model_len == 131072
    # Llama 3 (3.0) has 8k: the 16k default is lowered to it rather than refused by vLLM.
    assert ModelSpec.model_validate({"name": "x/Llama-3-8B"}).effective_max_model_len == 8192
    assert ModelSpec.model_validate({"name": "x/Llama-3.1-8B"}).effective_max_model_len == 16384


@pytest.mark.parametrize(
    "args",
    [
        ["--tensor-parallel-size=8"],
        ["--gpu-memory-utilization=0.9", "--tensor_parallel_size", "8"],
        ["-tp", "8"],
        ["--port=9000"],
        ["--served-model-name", "other"],
        ["--tool-call-parser=hermes"],
    ],
)
def test_extra_args_may_not_repeat_a_managed_flag(args: list[str]) -> None:
    with pytest.raises(
        ValidationError, match=r"spec.model.extraArgs\[\d\]: .* is set by the operator"
    ):
        ModelSpec.model_validate({"name": "x/Llama-3.1-8B", "extraArgs": args})


def test_extra_args_and_served_names_are_bounded() -> None:
    with pytest.raises(ValidationError, match="4096"):
        ModelSpec.model_validate({"name": "x/Llama-3.1-8B", "extraArgs": ["x" * 700_000]})
    with pytest.raises(ValidationError, match="servedModelName"):
        ModelSpec.model_validate({"name": "x/Llama-3.1-8B", "servedModelName": "llama\nx"})
    ok = ModelSpec.model_validate(
        {"name": "x/Llama-3.1-8B", "extraArgs": ["--max-num-seqs", "8", "--model-impl=vllm"]}
    )
    assert ok.extra_args == ["--max-num-seqs", "8", "--model-impl=vllm"]


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (
            {"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}},
            "requests.memory: 2Gi exceeds",
        ),
        ({"requests": {"cpu": "banana"}}, "requests.cpu: 'banana' is not a quantity"),
        ({"limits": {"gpux": 1}}, "limits.gpux: a resource name is"),
        ({"requests": {"cpu": "1" * 65}}, "at most 64 characters"),
    ],
)
def test_resources_the_pod_template_would_refuse_are_refused(
    resources: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        ModelSpec.model_validate({"name": "x/Llama-3.1-8B", "resources": resources})


def test_valid_resources_are_accepted() -> None:
    resources = {
        "requests": {"cpu": "500m", "memory": "1.5Gi", "ephemeral-storage": "1e9"},
        "limits": {"cpu": 2, "memory": "2Gi", "hugepages-2Mi": "64Mi", "example.com/fpga": 1},
    }
    spec = ModelSpec.model_validate({"name": "x/Llama-3.1-8B", "resources": resources})
    assert spec.resources is not None
