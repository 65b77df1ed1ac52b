"""The longest context (tokens) the checkpoints of a model family support.

vLLM refuses to start when ``--max-model-len`` is beyond what the checkpoint's config allows, so
a ``spec.model.maxModelLen`` above the family's limit is refused at admission (the CEL rule of
:func:`context_rule`) and by the model, and the operator's default (16384) is lowered to the limit
for the few families whose context is shorter. A family not in the table is not checked. The first
pattern that matches the model name (case-insensitive, RE2 and Python alike) decides.

Limits are the longest any checkpoint of the family reaches with the extension its model card
documents (Qwen2.5: 32768 native, 131072 with YaRN rope scaling).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import JsonValue


@dataclass(frozen=True)
class ContextLimit:
    label: str
    pattern: str
    tokens: int


CONTEXT_LIMITS: tuple[ContextLimit, ...] = (
    ContextLimit("Llama 3.1/3.2/3.3", r"llama-?3\.[123]", 131072),
    ContextLimit("Llama 3", r"llama-?3-[0-9]", 8192),
    ContextLimit("Qwen2.5-1M", r"qwen-?2\.5.*-1m", 1010000),
    ContextLimit("Qwen2.5", r"qwen-?2\.5", 131072),
    ContextLimit("Mistral 7B", r"mistral-7b", 32768),
)


def context_limit(model_name: str) -> ContextLimit | None:
    """The context limit of ``model_name``'s family, or None when it is not known here."""
    for limit in CONTEXT_LIMITS:
        if re.search(limit.pattern, model_name, flags=re.IGNORECASE):
            return limit
    return None


def context_excess(model_name: str, max_model_len: int) -> str | None:
    """Why ``max_model_len`` cannot be served for ``model_name``, or None when it can."""
    limit = context_limit(model_name)
    if limit is None or max_model_len <= limit.tokens:
        return None
    return (
        f"spec.model.maxModelLen: {max_model_len} is beyond the context of {limit.label} models "
        f"({limit.tokens} tokens); vLLM would refuse to start"
    )


def _re2(pattern: str) -> str:
    return f"(?i)({pattern})".replace("\\", "\\\\")


def _chain(values: list[str], fallback: str) -> str:
    text = fallback
    for limit, value in reversed(list(zip(CONTEXT_LIMITS, values, strict=True))):
        text = f"(self.name.matches('{_re2(limit.pattern)}') ? {value} : {text})"
    return text


def context_rule() -> dict[str, JsonValue]:
    """CEL: an explicit maxModelLen fits the family's context."""
    fits = [f"self.maxModelLen <= {limit.tokens}" for limit in CONTEXT_LIMITS]
    labels = [
        f"'the context of {limit.label} models ({limit.tokens} tokens)'" for limit in CONTEXT_LIMITS
    ]
    message = (
        f"'spec.model.maxModelLen is beyond ' + {_chain(labels, repr('the model context'))} + "
        "'; vLLM would refuse to start'"
    )
    return {
        "rule": f"!has(self.name) || !has(self.maxModelLen) || {_chain(fits, 'true')}",
        "messageExpression": message,
        "message": "spec.model.maxModelLen is beyond the context of the model: "
        + "; ".join(f"{limit.label} {limit.tokens}" for limit in CONTEXT_LIMITS),
        "fieldPath": ".maxModelLen",
    }


__all__ = ["CONTEXT_LIMITS", "ContextLimit", "context_excess", "context_limit", "context_rule"]
