"""examples/contracts: every sleuth object validates against its spec model, and the golden
dataset ConfigMap holds exactly the golden set sleuth ships, which still matches its manifest.

(The cluster tests apply the same folder to a real control plane: tests/operator.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api.v1alpha1.kinds import KINDS
from sleuth.evals.golden.cases import load_golden, shipped_golden_path
from sleuth.evals.golden.manifest import verify
from sleuth.evals.tsa.cases import load_cases, shipped_cases_path

pytestmark = pytest.mark.unit

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "contracts"


def _docs() -> list[dict[str, Any]]:
    return [
        d
        for path in sorted(EXAMPLES.glob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if d
    ]


def test_every_sleuth_object_validates_and_all_three_kinds_are_shown() -> None:
    models = {k.kind: k.spec for k in KINDS}
    shown = set()
    for doc in _docs():
        if doc["apiVersion"].startswith("sleuth.dev/"):
            models[doc["kind"]].model_validate(doc["spec"])
            shown.add(doc["kind"])
    assert shown == set(models)


def test_the_golden_configmap_is_the_shipped_set_and_matches_its_manifest(tmp_path: Path) -> None:
    (cm,) = [d for d in _docs() if d["kind"] == "ConfigMap" and "golden" in d["metadata"]["name"]]
    (schedule,) = [d for d in _docs() if d["kind"] == "EvalSchedule"]
    ref = schedule["spec"]["dataset"]["configMapRef"]
    assert ref["name"] == cm["metadata"]["name"]
    shipped = shipped_golden_path()
    data = cm["data"]
    assert data[ref["key"]] == shipped.read_text(encoding="utf-8")
    manifest = shipped.with_name(shipped.name + ".manifest.json")
    assert data[ref["key"] + ".manifest.json"] == manifest.read_text(encoding="utf-8")
    # What the eval pod sees once the ConfigMap is mounted: the frozen split verifies.
    for key, text in data.items():
        (tmp_path / key).write_text(text, encoding="utf-8")
    golden = tmp_path / ref["key"]
    verify(load_golden(golden), golden)
    assert load_golden(golden, schedule["spec"]["dataset"]["split"])


def test_the_tsa_configmap_is_the_shipped_cases_and_they_load(tmp_path: Path) -> None:
    """The EvalSchedule scores TSA on the ConfigMap it names: here the cases sleuth ships for
    this sample agent, which load and hold the split the schedule asks for."""
    (schedule,) = [d for d in _docs() if d["kind"] == "EvalSchedule"]
    ref = schedule["spec"]["toolSelection"]["configMapRef"]
    (cm,) = [
        d for d in _docs() if d["kind"] == "ConfigMap" and d["metadata"]["name"] == ref["name"]
    ]
    text = cm["data"][ref["key"]]
    assert text == shipped_cases_path().read_text(encoding="utf-8")
    (tmp_path / ref["key"]).write_text(text, encoding="utf-8")
    assert load_cases(tmp_path / ref["key"], schedule["spec"]["toolSelection"]["split"])
