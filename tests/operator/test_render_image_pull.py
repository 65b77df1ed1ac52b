"""Pull Secrets and pull policy on every pod the operator renders (the chart's imagePullSecrets
and image.pullPolicy, passed as --image-pull-secret and --image-pull-policy): model server,
agent, tool services and eval runs, through the same flags ``sleuth operator`` takes."""

from __future__ import annotations

import argparse
import subprocess
from typing import Any

import pytest
import yaml

from sleuth.operator.main import operator_settings
from tests.support.paths import EXAMPLES, SLEUTH

pytestmark = pytest.mark.unit


def _pod_specs(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every pod template of the rendered children, by kind/name."""
    pods: dict[str, dict[str, Any]] = {}
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if "template" in spec:
            pods[f"{doc['kind']}/{doc['metadata']['name']}"] = spec["template"]["spec"]
    return pods


def _render(*flags: str) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [str(SLEUTH), "render", "-f", str(EXAMPLES), "-n", "team-a", *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return _pod_specs([d for d in yaml.safe_load_all(proc.stdout) if d])


def test_every_rendered_pod_pulls_with_the_secrets_and_the_policy() -> None:
    pods = _render(
        "--image-pull-secret", "regcred", "--image-pull-secret", "mirror",
        "--image-pull-policy", "Always",
    )  # fmt: skip
    # the model server, the agent, the three tool services and the eval runs
    assert set(pods) == {
        "Deployment/contracts-model",
        "Deployment/contracts-agent",
        "Deployment/contracts-clauses-tool",
        "Deployment/contracts-sql-tool",
        "Deployment/contracts-web-tool",
        "CronJob/contracts-weekly-eval",
    }
    for name, pod in pods.items():
        assert pod["imagePullSecrets"] == [{"name": "regcred"}, {"name": "mirror"}], name
        for container in pod["containers"] + pod.get("initContainers", []):
            assert container["imagePullPolicy"] == "Always", (name, container["name"])


def test_without_them_the_cluster_defaults_apply() -> None:
    for name, pod in _render().items():
        assert "imagePullSecrets" not in pod, name
        assert not [c for c in pod["containers"] if "imagePullPolicy" in c], name


def test_a_policy_kubernetes_does_not_know_is_refused_naming_the_flag() -> None:
    proc = subprocess.run(
        [str(SLEUTH), "render", "-f", str(EXAMPLES), "--image-pull-policy", "always"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--image-pull-policy" in proc.stderr


def test_the_operator_takes_the_same_flags() -> None:
    from sleuth.core.cli import build_parser

    args: argparse.Namespace = build_parser("operator").parse_args(
        ["operator", "--image-pull-secret", "regcred", "--image-pull-secret", "regcred",
         "--image-pull-policy", "IfNotPresent"]
    )  # fmt: skip
    render = operator_settings(args, {}).render
    assert render.image_pull_secrets == ("regcred",)  # each name once
    assert render.image_pull_policy == "IfNotPresent"
