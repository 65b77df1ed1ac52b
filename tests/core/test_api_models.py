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
