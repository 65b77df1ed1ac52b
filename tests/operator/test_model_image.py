"""The default vLLM image: `--model-image` or SLEUTH_MODEL_IMAGE; spec.model.image wins."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.serving import DEFAULT_VLLM_IMAGE
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.model import render_model
from sleuth.operator.settings import settings_from_env

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


def test_the_default_vllm_image_is_pinned_by_digest_past_the_fixed_release() -> None:
    """A tag can be moved; a digest cannot. The release is past vLLM 0.11.1's security fixes, and
    the chart's default is the same pin."""
    import re

    import yaml

    from sleuth.core.api.v1alpha1.serving import DEFAULT_VLLM_RELEASE
    from tests.support.paths import ROOT

    assert re.fullmatch(r"docker\.io/vllm/vllm-openai@sha256:[0-9a-f]{64}", DEFAULT_VLLM_IMAGE)
    major, minor, patch = (int(x) for x in DEFAULT_VLLM_RELEASE.removeprefix("v").split("."))
    assert (major, minor, patch) >= (0, 11, 1)
    values = yaml.safe_load((ROOT / "charts" / "sleuth" / "values.yaml").read_text())
    assert values["modelImage"] == DEFAULT_VLLM_IMAGE
