"""A vector_search ToolBinding's retrieval knobs reach its tool service's config, and the reranker's
API key reaches the tool pod from its Secret."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.tool import render_tool
from sleuth.tools.service.config import load_spec

pytestmark = pytest.mark.unit

OWNER = Owner(kind="ToolBinding", name="clauses", namespace="team-a", uid="uid-1")
KNOBS = {
    "url": "http://qdrant:6333",
    "collection": "clauses",
    "topK": 5,
    "scoreThreshold": 0.4,
    "hybrid": {"fusion": "dbsf"},
    "candidates": 30,
    "reranker": {
        "endpoint": "http://reranker.models:8000",
        "model": "bge-reranker-v2-m3",
        "timeoutSeconds": 3,
        "scoreThreshold": 0.2,
        "apiKeySecretRef": {"name": "reranker", "key": "token"},
    },
    "chunking": {"size": 600, "overlap": 100},
}


def test_knobs_go_to_the_config_and_the_reranker_key_to_the_tool_pod_only(
    tmp_path: Path,
) -> None:
    spec = ToolBindingSpec.model_validate(
        {"agentRef": {"name": "contracts"}, "type": "vector_search", "vectorSearch": KNOBS}
    )
    configmap, deployment, _, _ = render_tool(OWNER, spec, RenderSettings())
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    reranker = {k: v for k, v in KNOBS["reranker"].items()}  # type: ignore[union-attr]
    assert config["vectorSearch"] == {**KNOBS, "reranker": {**reranker, "api": "cohere"}}
    path = tmp_path / "config.yaml"
    path.write_text(configmap["data"]["config.yaml"], encoding="utf-8")
    assert load_spec(path).vector_search == spec.vector_search
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    key = next(e for e in env if e["name"] == "SLEUTH_RERANKER_API_KEY")
    assert key["valueFrom"]["secretKeyRef"] == {"name": "reranker", "key": "token"}
