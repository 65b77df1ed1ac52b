"""The example renders exactly the checked-in manifests (golden files).

Regenerate after an intended change with ``SLEUTH_UPDATE_GOLDEN=1 pytest tests/operator`` and
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api.v1alpha1 import AgentDeploymentSpec, ToolBindingSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.agent import Binding, render_agent
from sleuth.operator.render.model import render_model
from sleuth.operator.render.tool import render_tool
from tests.operator.operator_testkit import GOLDEN, example

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
NS = "team-a"


def _owner(kind: str, name: str) -> Owner:
    return Owner(kind=kind, name=name, namespace=NS, uid=f"uid-{name}")


def _bindings() -> list[Binding]:
    return [
        Binding(d["metadata"]["name"], ToolBindingSpec.model_validate(d["spec"]))
        for d in example("ToolBinding")
    ]


def _rendered() -> dict[str, list[dict[str, Any]]]:
    agd = example("AgentDeployment", "contracts")[0]
    spec = AgentDeploymentSpec.model_validate(agd["spec"])
    owner = _owner("AgentDeployment", "contracts")
    out = {
        "model": render_model(owner, spec.model, SETTINGS),
        "agent": render_agent(owner, spec, _bindings(), SETTINGS),
    }
    for b in _bindings():
        out[b.name] = render_tool(_owner("ToolBinding", b.name), b.spec, SETTINGS)
    return out


def _dump(objs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objs, sort_keys=True, width=100)


@pytest.mark.parametrize("part", list(_rendered()))
def test_render_matches_golden(part: str) -> None:
    text = _dump(_rendered()[part])
    path = GOLDEN / f"{part}.yaml"
    if os.environ.get("SLEUTH_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs from the renderer's output"


def test_vllm_is_the_seed_configuration() -> None:
    deployment = _rendered()["model"][0]
    pod = deployment["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "4"
    assert args[args.index("--max-model-len") + 1] == "16384"
    assert args[args.index("--quantization") + 1] == "fp8"
    assert args[args.index("--tool-call-parser") + 1] == "llama3_json"
    assert "--enable-auto-tool-choice" in args
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "tolerations"
    ]
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hf-token", "key": "token"}


def test_agent_config_lists_the_three_tools_with_not_for_descriptions() -> None:
    configmap = _rendered()["agent"][0]
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    assert config["model"]["endpoint"] == "http://contracts-model.team-a.svc:8000/v1"
    assert config["model"]["servedModelName"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert [t["name"] for t in config["tools"]] == ["sql_query", "vector_search", "web_search"]
    assert all("NOT for" in t["description"] for t in config["tools"])
    sql = next(t for t in config["tools"] if t["name"] == "sql_query")
    assert sql["endpoint"].startswith("http://contracts-sql-tool.team-a.svc:8080")
    assert "contracts" in sql["description"]
    assert config["parallelToolCalls"] is False  # llama3_json emits one call per turn
    assert config["maxIterations"] == 5


def test_credentials_live_only_in_their_tool_service() -> None:
    rendered = _rendered()
    for part, objs in rendered.items():
        text = _dump(objs)
        assert ("contracts-postgres" in text) == (part == "contracts-sql"), part
        assert ("hf-token" in text) == (part == "model"), part


def test_tool_service_reads_the_rendered_config(tmp_path: Path) -> None:
    """The ConfigMap is what `sleuth tool-service` loads: the spec, name and description set."""
    from sleuth.tools.service.config import load_spec

    for binding in _bindings():
        configmap = _rendered()[binding.name][0]
        path = tmp_path / f"{binding.name}.yaml"
        path.write_text(configmap["data"]["config.yaml"], encoding="utf-8")
        loaded = load_spec(path)
        assert loaded.tool_name == binding.spec.tool_name
        assert loaded.type == binding.spec.type
        assert loaded.description is not None
        assert "NOT for" in loaded.description
        assert loaded.timeout_seconds == binding.spec.timeout_seconds
