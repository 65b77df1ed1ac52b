"""vLLM tool-call parsers, and which ones a model family's own chat template fits.

The table :data:`FAMILIES` is the one source: the operator derives the parser from it, the model
refuses a parser that contradicts the family, and the AgentDeployment CRD's CEL rules
(:func:`family_rule`, :func:`parser_rule`) say the same at admission. The first family whose
pattern matches the model name decides, so fine-tunes named after their format (Hermes-3-Llama-3.1,
Llama-xLAM) come before the base families. Sources: vLLM's tool-calling documentation (which
parser each family's template emits; Llama 4 and Llama 3.2 also have pythonic templates).

The operator passes no ``--chat-template``: vLLM uses the checkpoint's own, so the parser must read
what that template makes the model write. A user who ships a template of their own (an
``extraArgs`` entry ``--chat-template``) takes that choice, and the parser is not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

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


@dataclass(frozen=True)
class Family:
    """A model family: a case-insensitive pattern (RE2 and Python alike) on the model name, the
    parser derived for it, and every parser its own chat template fits."""

    label: str
    pattern: str
    parser: ToolCallParser
    accepts: tuple[ToolCallParser, ...]


FAMILIES: tuple[Family, ...] = (
    Family("xLAM", r"xlam", "xlam", ("xlam",)),
    Family("Hermes", r"hermes", "hermes", ("hermes",)),
    Family(
        "Llama 4", r"llama-?4", "llama4_pythonic", ("llama4_pythonic", "pythonic", "llama4_json")
    ),
    Family("Llama 3.x", r"llama-?3", "llama3_json", ("llama3_json", "pythonic")),
    Family("Qwen3-Coder", r"qwen-?3-coder", "qwen3_coder", ("qwen3_coder",)),
    Family("Qwen2.5/Qwen3/QwQ", r"qwen-?2\.5|qwen-?3|qwq", "hermes", ("hermes",)),
    Family("Mistral", r"mistral", "mistral", ("mistral",)),
)

# Kept for callers that read (pattern, parser) pairs.
FAMILY_PARSERS: tuple[tuple[str, ToolCallParser], ...] = tuple(
    (f.pattern, f.parser) for f in FAMILIES
)

# Parsers known to emit one tool call per turn: parallel tool calls default to off with them.
SINGLE_CALL_PARSERS: frozenset[str] = frozenset({"llama3_json"})

# An extraArgs entry with this prefix brings its own chat template: the parser is the user's call.
CHAT_TEMPLATE_ARG = re.compile(r"^--chat[-_]template(=|$)")


def family_of(model_name: str) -> Family | None:
    """The family of ``model_name``: the first whose pattern matches; None when unknown."""
    for family in FAMILIES:
        if re.search(family.pattern, model_name, flags=re.IGNORECASE):
            return family
    return None


def derive_tool_call_parser(model_name: str) -> ToolCallParser | None:
    """The vLLM tool-call parser for ``model_name``'s family, or None when the family is unknown."""
    family = family_of(model_name)
    return family.parser if family is not None else None


def parser_mismatch(
    model_name: str, parser: ToolCallParser, extra_args: list[str] | None
) -> str | None:
    """Why ``parser`` cannot read what ``model_name`` writes, or None when it fits (or the family
    is unknown, or ``extra_args`` brings its own chat template)."""
    family = family_of(model_name)
    if family is None or parser in family.accepts:
        return None
    if any(CHAT_TEMPLATE_ARG.match(arg) for arg in extra_args or []):
        return None
    return _mismatch(family, parser)


def _mismatch(family: Family, parser: str) -> str:
    return f"spec.model.toolCallParser: {parser} does not fit {_advice(family)}{_TAIL}"


def _advice(family: Family) -> str:
    return f"{family.label} models; use {' or '.join(family.accepts)}"


_TAIL = " (or omit it), or bring a chat template for it (--chat-template in spec.model.extraArgs)"


def _re2(pattern: str) -> str:
    return f"(?i)({pattern})".replace("\\", "\\\\")


def family_rule() -> str:
    """CEL: a model of no known family must name its parser, unless its calls are guided."""
    families = "|".join(f.pattern for f in FAMILIES)
    return (
        "!has(self.name) || has(self.toolCallParser) || "
        "(has(self.toolCalling) && self.toolCalling == 'guided') || "
        f"self.name.matches('{_re2(families)}')"
    )


def _chain(leaf: list[str], fallback: str) -> str:
    """``name matches family 1 ? leaf[0] : name matches family 2 ? leaf[1] : ... : fallback``."""
    text = fallback
    for family, value in reversed(list(zip(FAMILIES, leaf, strict=True))):
        text = f"(self.name.matches('{_re2(family.pattern)}') ? {value} : {text})"
    return text


_OWN_TEMPLATE = (
    "(has(self.extraArgs) && self.extraArgs.exists(a, a.matches('^--chat[-_]template(=|$)')))"
)


def parser_rule() -> dict[str, JsonValue]:
    """CEL: an explicit parser must fit the family of the model (unless a template comes along)."""
    accepted = [
        "self.toolCallParser in [" + ", ".join(f"'{p}'" for p in f.accepts) + "]" for f in FAMILIES
    ]
    advice = [f"'{_advice(f)}'" for f in FAMILIES]
    message = (
        "'spec.model.toolCallParser: ' + self.toolCallParser + ' does not fit ' + "
        f"{_chain(advice, repr('this model'))} + '{_TAIL}'"
    )
    return {
        "rule": "!has(self.name) || !has(self.toolCallParser) || "
        f"{_OWN_TEMPLATE} || {_chain(accepted, 'true')}",
        "messageExpression": message,
        "message": "spec.model.toolCallParser does not fit the model family of spec.model.name: "
        + "; ".join(f"{f.label} takes {' or '.join(f.accepts)}" for f in FAMILIES),
        "fieldPath": ".toolCallParser",
    }


__all__ = [
    "CHAT_TEMPLATE_ARG",
    "FAMILIES",
    "FAMILY_PARSERS",
    "SINGLE_CALL_PARSERS",
    "Family",
    "ToolCallParser",
    "derive_tool_call_parser",
    "family_of",
    "family_rule",
    "parser_mismatch",
    "parser_rule",
]
