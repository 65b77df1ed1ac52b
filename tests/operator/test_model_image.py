"""The default vLLM image: `--model-image` or SLEUTH_MODEL_IMAGE; spec.model.image wins."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.agentdeployment import DEFAULT_VLLM_IMAGE
from sleuth.operator.main import settings_from_env
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.model import render_model

pytestmark = pytest.mark.unit

OWNER = Owner(kind="AgentDeployment", name="contracts", namespace="team-a", uid="u-1")
MIRROR = "registry.internal/vllm/vllm-openai:v0.11.0"


def vllm_image(model: dict[str, Any], settings: RenderSettings) -> str:
    spec = AgentDeploymentSpec.model_validate({"model": model})
    (deployment,) = [
        m for m in render_model(OWNER, spec.model, settings) if m["kind"] == "Deployment"
    ]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    image: str = container["image"]
    return image


def test_the_operator_default_applies_when_the_spec_names_no_image() -> None:
    model = {"name": "meta-llama/Llama-3.1-8B-Instruct"}
    assert vllm_image(model, RenderSettings()) == DEFAULT_VLLM_IMAGE
    assert vllm_image(model, RenderSettings(model_image=MIRROR)) == MIRROR
    pinned = {**model, "image": "docker.io/vllm/vllm-openai:v0.10.2"}
    assert vllm_image(pinned, RenderSettings(model_image=MIRROR)) == pinned["image"]


def test_settings_read_the_images_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_IMAGE", raising=False)
    monkeypatch.delenv("SLEUTH_MODEL_IMAGE", raising=False)
    assert settings_from_env() == RenderSettings()
    monkeypatch.setenv("SLEUTH_MODEL_IMAGE", MIRROR)
    monkeypatch.setenv("SLEUTH_IMAGE", "registry.internal/sleuth:0.1.0")
    settings = settings_from_env()
    assert settings.model_image == MIRROR
    assert settings.sleuth_image == "registry.internal/sleuth:0.1.0"
