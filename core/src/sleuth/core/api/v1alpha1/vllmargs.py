"""The vLLM flags the operator sets itself, which ``spec.model.extraArgs`` may not repeat.

vLLM reads the last occurrence of a flag, so ``--tensor-parallel-size=8`` after the rendered
``--tensor-parallel-size 1`` would shard over 8 GPUs in a pod that holds ``gpu.count``; the same
goes for the port the probes use and the parser the family check chose. Each has a spec field.
vLLM accepts ``_`` for ``-`` in long flags and the aliases ``-tp`` and ``-q``.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, JsonValue

MAX_EXTRA_ARG_CHARS = 4096
ExtraArg = Annotated[str, Field(min_length=1, max_length=MAX_EXTRA_ARG_CHARS)]
"""One vLLM argument: a flag, ``--flag=value``, or the value after a flag."""

# flag → the spec field that sets it
MANAGED_FLAGS: dict[str, str] = {
    "--model": "spec.model.name",
    "--served-model-name": "spec.model.servedModelName",
    "--tensor-parallel-size": "spec.model.tensorParallelSize",
    "-tp": "spec.model.tensorParallelSize",
    "--max-model-len": "spec.model.maxModelLen",
    "--quantization": "spec.model.quantization",
    "-q": "spec.model.quantization",
    "--enable-auto-tool-choice": "spec.model.toolCallParser",
    "--tool-call-parser": "spec.model.toolCallParser",
    "--host": "the operator (0.0.0.0)",
    "--port": "the operator (the Service's port)",
}


def _long(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "[-_]")


_ALTERNATIVES = "|".join(_long(f) for f in MANAGED_FLAGS if f.startswith("--"))
_SHORT = "|".join(f for f in MANAGED_FLAGS if not f.startswith("--"))
MANAGED_PATTERN = rf"^(--({_ALTERNATIVES})|{_SHORT})(=|$)"
_MANAGED = re.compile(MANAGED_PATTERN)


def managed_flag(arg: str) -> str | None:
    """The managed flag ``arg`` sets (canonical spelling), or None."""
    if not _MANAGED.match(arg):
        return None
    name = arg.split("=", 1)[0]
    canonical = name if not name.startswith("--") else "--" + name[2:].replace("_", "-")
    return canonical


def repeated_flag(extra_args: list[str]) -> str | None:
    """Why ``extra_args`` cannot be used (the first managed flag it repeats), or None."""
    for index, arg in enumerate(extra_args):
        flag = managed_flag(arg)
        if flag is not None:
            return (
                f"spec.model.extraArgs[{index}]: {flag} is set by the operator from "
                f"{MANAGED_FLAGS[flag]}; set it there instead"
            )
    return None


def extra_args_rule() -> dict[str, JsonValue]:
    """CEL: no extraArgs entry repeats a managed flag."""
    pattern = MANAGED_PATTERN.replace("\\", "\\\\")
    return {
        "rule": f"!has(self.extraArgs) || !self.extraArgs.exists(a, a.matches('{pattern}'))",
        "message": "spec.model.extraArgs must not repeat a flag the operator sets from the spec ("
        + ", ".join(MANAGED_FLAGS)
        + "): set spec.model.name, servedModelName, tensorParallelSize, maxModelLen, "
        "quantization or toolCallParser instead",
        "fieldPath": ".extraArgs",
    }


__all__ = [
    "MANAGED_FLAGS",
    "MANAGED_PATTERN",
    "MAX_EXTRA_ARG_CHARS",
    "ExtraArg",
    "extra_args_rule",
    "managed_flag",
    "repeated_flag",
]
