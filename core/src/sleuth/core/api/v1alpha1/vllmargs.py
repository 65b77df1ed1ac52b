"""What ``spec.model.extraArgs`` may not hold: the flags the operator sets itself, and the flags
that widen what the model server may do.

vLLM reads the last occurrence of a flag, so ``--tensor-parallel-size=8`` after the rendered
``--tensor-parallel-size 1`` would shard over 8 GPUs in a pod that holds ``gpu.count``; the same
goes for the port the probes use and the parser the family check chose. Each has a spec field.
vLLM accepts ``_`` for ``-`` in long flags and the aliases ``-tp`` and ``-q``.

The model server runs an image the platform team allowed, with whatever Secret the spec names
in its environment, on GPU nodes; so flags that make it run code from elsewhere, read files of
the pod, reach other hosts or carry a credential in plain arguments are refused
(:data:`WIDENING_FLAGS`, each with the reason). argparse (which vLLM's parser extends) accepts
any unambiguous prefix of a long flag and vLLM accepts ``--flag.key value`` for its JSON
options, so an argument is refused when its flag name, up to ``=`` or ``.``, is a prefix of a
refused one: ``--trust-remote`` and ``--trust_remote_code=true`` as well.
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


# flag -> why it is refused
WIDENING_FLAGS: dict[str, str] = {
    "--trust-remote-code": "it runs Python code shipped with the model repository",
    "--allowed-local-media-path": "it lets requests read files of the model server pod",
    "--config": "it reads more options from a file, past these checks",
    "--tool-parser-plugin": "it imports a Python file as a parser",
    "--middleware": "it imports Python code into the API server",
    "--worker-cls": "it imports a Python class into the workers",
    "--worker-extension-cls": "it imports a Python class into the workers",
    "--logits-processors": "it imports Python classes into the sampler",
    "--model-loader-extra-config": "it configures loaders that fetch or run code",
    "--otlp-traces-endpoint": "it sends traces to a host no allowlist checks",
    "--kv-transfer-config": "it connects the server to peers no allowlist checks",
    "--kv-events-config": "it publishes events to peers no allowlist checks",
    "--api-key": "a credential in plain arguments; keys come from Secrets",
}


def _prefixes(name: str) -> str:
    """A regular expression matching every non-empty prefix of a flag name (``_`` for ``-``)."""
    text = ""
    for char in reversed(name[1:]):
        step = "[-_]" if char == "-" else re.escape(char)
        text = f"({step}{text})?"
    return re.escape(name[0]) + text


WIDENING_PATTERN = "^--(" + "|".join(_prefixes(flag[2:]) for flag in WIDENING_FLAGS) + ")([=.].*)?$"
_WIDENING = re.compile(WIDENING_PATTERN)


def widening_flag(extra_args: list[str]) -> str | None:
    """Why ``extra_args`` cannot be used (the first widening flag it sets), or None."""
    for index, arg in enumerate(extra_args):
        if not _WIDENING.match(arg):
            continue
        name = arg[2:].split("=", 1)[0].split(".", 1)[0].replace("_", "-")
        flag = next(f for f in WIDENING_FLAGS if f[2:].startswith(name))
        return f"spec.model.extraArgs[{index}]: {flag} is not allowed: {WIDENING_FLAGS[flag]}"
    return None


WIDENING_MESSAGE = (
    "spec.model.extraArgs must not widen what the model server may do ("
    + ", ".join(WIDENING_FLAGS)
    + ", or a prefix of one): they run code from elsewhere, read local files, reach unchecked "
    "hosts or carry a credential"
)


def widening_validation() -> dict[str, str]:
    """The same rule as a ValidatingAdmissionPolicy validation (the chart's policy of
    AgentDeployments, :mod:`sleuth.core.api.admissiongen`). Not a CRD rule: over 64 arguments of
    4096 characters the apiserver's static cost estimate of this expression exceeds the CRD
    budget, while a policy pays only for the arguments an object really has."""
    pattern = WIDENING_PATTERN.replace("\\", "\\\\")
    return {
        "expression": "!has(object.spec.model) || !has(object.spec.model.extraArgs) || "
        f"!object.spec.model.extraArgs.exists(a, a.matches('{pattern}'))",
        "message": WIDENING_MESSAGE,
        "reason": "Invalid",
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
    "WIDENING_FLAGS",
    "WIDENING_MESSAGE",
    "WIDENING_PATTERN",
    "ExtraArg",
    "extra_args_rule",
    "managed_flag",
    "repeated_flag",
    "widening_flag",
    "widening_validation",
]
