"""vLLM tool-call parsers, and which one a model family needs.

The table :data:`FAMILY_PARSERS` is the one source: the operator derives the parser from it, and
the AgentDeployment CRD's CEL rule (built by :func:`family_rule`) refuses a model of an unknown
family that names no parser.
"""

from __future__ import annotations

import re
from typing import Literal

ToolCallParser = Literal[
    "llama3_json",
    "llama4_pythonic",
    "llama4_json",
    "hermes",
    "mistral",
    "pythonic",
    "granite",
    "internlm",
    "jamba",
    "xlam",
    "qwen3_coder",
    "deepseek_v3",
    "kimi_k2",
    "openai",
    "phi4_mini_json",
]

# Model family (case-insensitive RE2/Python regex on the model name) → vLLM tool-call parser.
# The CRD's CEL rule is built from the same table, so the apiserver and the operator agree.
FAMILY_PARSERS: tuple[tuple[str, ToolCallParser], ...] = (
    (r"llama-?4", "llama4_pythonic"),
    (r"llama-?3", "llama3_json"),
    (r"qwen-?2\.5|qwen-?3", "hermes"),
    (r"mistral", "mistral"),
)

# Parsers known to emit one tool call per turn: parallel tool calls default to off with them.
SINGLE_CALL_PARSERS: frozenset[str] = frozenset({"llama3_json"})


def derive_tool_call_parser(model_name: str) -> ToolCallParser | None:
    """The vLLM tool-call parser for ``model_name``'s family, or None when the family is unknown."""
    for pattern, parser in FAMILY_PARSERS:
        if re.search(pattern, model_name, flags=re.IGNORECASE):
            return parser
    return None


def family_rule() -> str:
    families = "|".join(pattern for pattern, _ in FAMILY_PARSERS).replace("\\", "\\\\")
    return f"!has(self.name) || has(self.toolCallParser) || self.name.matches('(?i)({families})')"


__all__ = [
    "FAMILY_PARSERS",
    "SINGLE_CALL_PARSERS",
    "ToolCallParser",
    "derive_tool_call_parser",
    "family_rule",
]
