"""The checked-in CRDs are exactly what the spec models generate, and they read well."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api import crddocs, crdgen
from sleuth.core.api.v1alpha1.kinds import KINDS
from sleuth.core.cli import main

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "crds"


def _load(kind_plural: str) -> dict[str, Any]:
    text = (CRDS / f"sleuth.dev_{kind_plural}.yaml").read_text(encoding="utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def _walk(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    for name, sub in node.get("properties", {}).items():
        found += _walk(sub, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        found += _walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _walk(node["additionalProperties"], f"{path}{{}}")
    return found


def test_checked_in_crds_match_a_fresh_generation(tmp_path: Path) -> None:
    for kind in KINDS:
        fresh = crdgen.render(kind)
        current = (CRDS / crdgen.filename(kind)).read_text(encoding="utf-8")
        assert current == fresh, (
            f"crds/{crdgen.filename(kind)} is stale: run `sleuth crds generate`"
        )
    assert sorted(p.name for p in CRDS.glob("sleuth.dev_*.yaml")) == sorted(
        crdgen.filename(k) for k in KINDS
    )


def test_check_mode_reports_a_drifted_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "operator.md"
    docs.write_text(f"# Ops\n\n{crddocs.BEGIN}\n{crddocs.END}\n")
    args = ["crds", "generate", "--out", str(tmp_path), "--docs", str(docs)]
    assert main(args) == 0
    assert "| `spec.model.gpu.count` (required) | integer |" in docs.read_text()
    assert main([*args, "--check"]) == 0
    target = tmp_path / crdgen.filename(KINDS[0])
    target.write_text(target.read_text() + "# edited\n")
    docs.write_text(docs.read_text().replace("integer", "int"))
    assert main([*args, "--check"]) == 1
    err = capsys.readouterr().err
    assert crdgen.filename(KINDS[0]) in err
    assert "operator.md" in err


def test_docs_reference_is_current() -> None:
    text = (ROOT / "docs" / "operator.md").read_text(encoding="utf-8")
    assert crddocs.updated(text) == text, "docs/operator.md is stale: run `sleuth crds generate`"


@pytest.mark.parametrize("plural", [k.plural for k in KINDS])
def test_schema_is_structural_and_every_field_is_described(plural: str) -> None:
    crd = _load(plural)
    version = crd["spec"]["versions"][0]
    root = version["schema"]["openAPIV3Schema"]
    text = yaml.safe_dump(root)
    for forbidden in ("$ref", "anyOf", "title:", "null"):
        assert forbidden not in text, forbidden
    for path, node in _walk(root, plural):
        assert "type" in node or node.get("x-kubernetes-int-or-string"), path
        scalar_item = path.endswith("[]") and node.get("type") != "object"
        if path.endswith(".metadata") or path.endswith("{}") or scalar_item:
            continue
        assert node.get("description"), f"{path} has no description"
    assert version["subresources"] == {"status": {}}
    assert crd["spec"]["names"]["categories"] == ["sleuth"]
    assert crd["spec"]["names"]["shortNames"]


def test_agentdeployment_columns_and_rules() -> None:
    version = _load("agentdeployments")["spec"]["versions"][0]
    names = [c["name"] for c in version["additionalPrinterColumns"]]
    assert names[:6] == ["Ready", "Model", "GPUs", "Model Replicas", "Agent Replicas", "Tools"]
    assert names[-1] == "Age"
    model = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["model"]
    rules = " ".join(r["rule"] for r in model["x-kubernetes-validations"])
    assert "has(self.endpoint) != has(self.name)" in rules
    assert "self.gpu.count %" in rules
    assert model["properties"]["gpu"]["properties"]["product"]["default"] == (
        "NVIDIA-H100-80GB-HBM3"
    )
    agent = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["agent"]
    assert agent["default"] == {}
    assert agent["properties"]["maxIterations"]["default"] == 5
    assert agent["properties"]["maxIterations"]["maximum"] == 10


def test_toolbinding_columns_and_rules() -> None:
    version = _load("toolbindings")["spec"]["versions"][0]
    names = [c["name"] for c in version["additionalPrinterColumns"] if not c.get("priority")]
    assert names == ["Ready", "Agent", "Type", "Age"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["type"]["enum"] == ["vector_search", "sql_query", "web_search"]
    assert spec["properties"]["sqlQuery"]["properties"]["allowedTables"]["minItems"] == 1
    rules = [r["rule"] for r in spec["x-kubernetes-validations"]]
    # type ↔ settings for each of the 3 types, embedded store replicas, approval tables (2)
    assert len(rules) == 6
    assert any("vectorSearch.embedded" in r and "replicas <= 1" in r for r in rules)
    vector = spec["properties"]["vectorSearch"]
    assert [r["rule"] for r in vector["x-kubernetes-validations"]] == [
        "has(self.url) != has(self.embedded)",
        "!has(self.candidates) || self.candidates >= self.topK",
    ]
    knobs = vector["properties"]
    assert knobs["scoreThreshold"]["maximum"] == 1
    assert knobs["hybrid"]["properties"]["fusion"]["enum"] == ["rrf", "dbsf"]
    assert knobs["reranker"]["properties"]["api"]["enum"] == ["cohere", "tei"]
    assert knobs["reranker"]["properties"]["timeoutSeconds"]["default"] == 2
    assert knobs["chunking"]["properties"]["size"]["default"] == 800
    assert "required" not in vector or "url" not in vector["required"]
