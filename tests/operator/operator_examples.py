"""Example manifests and golden-file locations shared by the operator tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "contracts"
GOLDEN = Path(__file__).resolve().parent / "golden"


def example_docs() -> list[dict[str, Any]]:
    """Every document of examples/contracts, in file order."""
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    return docs


def example(kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        d
        for d in example_docs()
        if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
