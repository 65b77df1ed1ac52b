"""`sleuth operator --model-image` reaches the vLLM Deployment of an agent that names no image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.operator.operator_testkit import OperatorProcess
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

MIRROR = "registry.internal/vllm/vllm-openai:v0.11.0"


def test_model_image_flag_is_the_default_vllm_image(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    log = tmp_path / "operator.log"
    proc = OperatorProcess(kube.kubeconfig, namespace, log, "--model-image", MIRROR)
    proc.start()
    try:
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / name))

        def image() -> str:
            proc_ = kube.kubectl(
                "get", "deployment", "contracts-model", "-n", namespace, "-o", "json", check=False
            )
            if proc_.returncode != 0:
                return ""
            spec = json.loads(proc_.stdout)["spec"]["template"]["spec"]
            return str(spec["containers"][0]["image"])

        assert eventually(image, what="the model Deployment exists") == MIRROR
    finally:
        proc.stop()
    assert "Traceback" not in proc.text()
