"""The tool service's configuration file: the ToolBinding's spec, read and validated.

The file is the ToolBinding's spec (camelCase, as the operator renders it: ``name`` and
``description`` filled in); the tools are built from it by :mod:`sleuth.agent.tools.build`, with
credentials from the environment of the tool service only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from sleuth.agent.tools.build import ServiceConfigError, ServiceTools
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec


def load_spec(path: Path) -> ToolBindingSpec:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ServiceConfigError(f"cannot read {path}: {err}") from None
    try:
        return ToolBindingSpec.model_validate(raw)
    except ValueError as err:
        raise ServiceConfigError(f"{path}: {err}") from None


def describe(tools: ServiceTools) -> list[dict[str, Any]]:
    """The OpenAI ``tools[]`` entries of the served tools."""
    return [tool.spec.to_openai() for tool in tools.tools.values()]
