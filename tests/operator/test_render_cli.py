"""``sleuth render``: the operator's children for resources in files, without a cluster."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from sleuth.operator.render import RenderSettings
from sleuth.operator.rendercli import render_objects
from tests.operator.operator_testkit import example_docs
from tests.support.paths import EXAMPLES, SLEUTH

pytestmark = pytest.mark.unit


def _render(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SLEUTH), "render", *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def test_the_examples_render_every_child_in_apply_order() -> None:
    proc = _render("-f", str(EXAMPLES), "-n", "team-a")
    assert proc.returncode == 0, proc.stderr
    docs = list(yaml.safe_load_all(proc.stdout))
    keys = [f"{d['kind']}/{d['metadata']['name']}" for d in docs]
    assert keys[:2] == ["NetworkPolicy/contracts-model", "Deployment/contracts-model"]
    for name in (
        "contracts-agent",
        "contracts-clauses-tool",
        "contracts-sql-tool",
        "contracts-web-tool",
    ):
        assert keys.index(f"NetworkPolicy/{name}") < keys.index(f"Deployment/{name}")
    assert keys.index("ServiceAccount/contracts-weekly-eval") < keys.index(
        "CronJob/contracts-weekly-eval"
    )
    assert "NetworkPolicy/contracts-weekly-eval" in keys
    assert "PrometheusRule/contracts-weekly-eval-alerts" in keys
    assert {d["metadata"]["namespace"] for d in docs} == {"team-a"}
    assert all(
        d["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "sleuth-operator" for d in docs
    )
    # The same objects the library renders (the command adds nothing of its own).
    objs = [
        {**d, "metadata": {**d["metadata"], "namespace": "team-a", "uid": ""}}
        for d in example_docs()
    ]
    assert docs == render_objects(objs, RenderSettings()).children


def test_chart_settings_are_flags() -> None:
    proc = _render(
        "-f",
        str(EXAMPLES / "10-agentdeployment.yaml"),
        "--model-image",
        "registry.internal/vllm@sha256:" + "a" * 64,
        "--network-policy-metrics-from",
        json.dumps(
            [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "mon"}}}]
        ),
    )
    assert proc.returncode == 0, proc.stderr
    docs = {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(proc.stdout)}
    vllm = docs["Deployment/contracts-model"]["spec"]["template"]["spec"]["containers"][0]
    assert vllm["image"] == "registry.internal/vllm@sha256:" + "a" * 64
    peers = docs["NetworkPolicy/contracts-model"]["spec"]["ingress"][0]["from"]
    assert peers[-1]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "mon"}


def test_refusals_name_the_field_and_fail(tmp_path: Path) -> None:
    agent = next(d for d in example_docs() if d["kind"] == "AgentDeployment")
    bad = {
        **agent,
        "spec": {**agent["spec"], "model": {**agent["spec"]["model"], "gpu": {"count": 3}}},
    }
    orphan = {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "ToolBinding",
        "metadata": {"name": "lonely"},
        "spec": {
            "agentRef": {"name": "nobody"},
            "type": "web_search",
            "webSearch": {"url": "http://searx:8080", "allowExternal": True},
        },
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([bad, orphan]))
    proc = _render("-f", str(path))
    assert proc.returncode == 1
    assert "AgentDeployment default/contracts: InvalidSpec: spec.model.gpu.count" in proc.stderr
    assert "ToolBinding default/lonely: spec.agentRef.name: AgentDeployment nobody" in proc.stderr
    assert proc.stdout == ""

    assert _render("-f", str(tmp_path / "missing.yaml")).returncode == 2
    broken = _render("-f", "-", "--network-policy-metrics-from", "{", stdin="")
    assert broken.returncode == 2
    assert "--network-policy-metrics-from: not valid JSON" in broken.stderr


def test_standard_input_and_a_clashing_binding() -> None:
    docs = [d for d in example_docs() if d["kind"] in ("AgentDeployment", "ToolBinding")]
    clone = next(d for d in docs if d["metadata"]["name"] == "contracts-web")
    twin = {
        **clone,
        "metadata": {"name": "contracts-web-2", "creationTimestamp": "2099-01-01T00:00:00Z"},
    }
    proc = _render("-f", "-", stdin=yaml.safe_dump_all([*docs, twin]))
    assert proc.returncode == 1
    assert "contracts-web-2: spec.name: tool name web_search is already bound" in proc.stderr
    names = {d["metadata"]["name"] for d in yaml.safe_load_all(proc.stdout)}
    assert "contracts-web-tool" in names
    assert "contracts-web-2-tool" not in names
