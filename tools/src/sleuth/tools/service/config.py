"""The tool service's configuration file: the ToolBinding's spec, read and validated.

The file is the ToolBinding's spec (camelCase, as the operator renders it: ``name`` and
``description`` filled in); the tools are built from it by :mod:`sleuth.tools.build`, with
credentials from the environment of the tool service only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.tools.build import ServiceConfigError, ServiceTools


def load_spec(path: Path, tool_type: str | None = None) -> ToolBindingSpec:
    """A ToolBinding spec from ``path``: the tool service's config file (the spec itself), or
    ToolBinding manifests (``kind: ToolBinding``; several documents are allowed when exactly one
    of them is of ``tool_type``)."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]
    except (OSError, yaml.YAMLError) as err:
        raise ServiceConfigError(f"cannot read {path}: {err}") from None
    manifests = [d for d in docs if isinstance(d, dict) and "kind" in d]
    if manifests:
        bindings = [d for d in manifests if d.get("kind") == "ToolBinding"]
        if tool_type is not None:
            bindings = [d for d in bindings if (d.get("spec") or {}).get("type") == tool_type]
        if len(bindings) != 1:
            wanted = f"ToolBinding of type {tool_type}" if tool_type else "ToolBinding"
            raise ServiceConfigError(f"{path}: expected one {wanted}, found {len(bindings)}")
        raw = bindings[0].get("spec")
    elif len(docs) == 1:
        raw = docs[0]
    else:
        raise ServiceConfigError(
            f"{path}: expected one ToolBinding spec, found {len(docs)} documents"
        )
    try:
        return ToolBindingSpec.model_validate(raw)
    except ValueError as err:
        raise ServiceConfigError(f"{path}: {err}") from None


def describe(tools: ServiceTools) -> list[dict[str, Any]]:
    """The OpenAI ``tools[]`` entries of the served tools."""
    return [tool.spec.to_openai() for tool in tools.tools.values()]
