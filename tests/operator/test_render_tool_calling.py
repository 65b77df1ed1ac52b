"""spec.model.toolCalling and guidedFormat: validated, rendered into the agent's configuration
file, and a served model of an unknown family needs no tool-call parser when calls are guided."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from sleuth.core.api.agent_config import parse_agent_config
from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import render_agent
from sleuth.operator.render.model import vllm_args

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="uid-1")
ENDPOINT = {"endpoint": "http://llama.models:8080/v1", "servedModelName": "qwen"}


def _config(model: dict[str, Any]) -> dict[str, Any]:
    spec = AgentDeploymentSpec.model_validate({"model": model})
    configmap = render_agent(OWNER, spec, [], SETTINGS)[0]
    config: dict[str, Any] = yaml.safe_load(configmap["data"]["config.yaml"])
    parse_agent_config(configmap["data"]["config.yaml"])  # the agent accepts what is rendered
    return config


def test_native_is_the_default() -> None:
    model = _config(ENDPOINT)["model"]
    assert (model["toolCalling"], model["guidedFormat"]) == ("native", "json_schema")


def test_guided_and_its_format_reach_the_agent() -> None:
    model = _config({**ENDPOINT, "toolCalling": "guided", "guidedFormat": "json_object"})["model"]
    assert (model["toolCalling"], model["guidedFormat"]) == ("guided", "json_object")


def test_guided_serves_an_unknown_family_without_a_parser() -> None:
    with pytest.raises(ValidationError, match="toolCallParser is required"):
        AgentDeploymentSpec.model_validate({"model": {"name": "google/gemma-2-9b-it"}})
    spec = AgentDeploymentSpec.model_validate(
        {"model": {"name": "google/gemma-2-9b-it", "toolCalling": "guided"}}
    )
    args = vllm_args(spec.model, SETTINGS)
    assert "--tool-call-parser" not in args
    assert "--enable-auto-tool-choice" not in args
    known = AgentDeploymentSpec.model_validate(
        {"model": {"name": "Qwen/Qwen2.5-7B-Instruct", "toolCalling": "guided"}}
    )
    assert "hermes" in vllm_args(known.model, SETTINGS)  # a known parser is still rendered


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ({**ENDPOINT, "guidedFormat": "json_object"}, "guidedFormat is used only with"),
        ({**ENDPOINT, "toolCalling": "grammar"}, "toolCalling"),
        ({**ENDPOINT, "toolCalling": "guided", "guidedFormat": "xml"}, "guidedFormat"),
    ],
)
def test_bad_values_name_the_field(model: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AgentDeploymentSpec.model_validate({"model": model})
