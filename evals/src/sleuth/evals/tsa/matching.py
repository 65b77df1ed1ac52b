"""Argument values against acceptable lists, after normalisation (BFCL semantics).

Normalisation: strings are case-folded with runs of whitespace collapsed and surrounding
whitespace removed; integers and floats compare by value (``5 == 5.0``) but booleans are not
numbers; lists compare element by element, objects key by key. A string never equals a number.
"""

from __future__ import annotations

import re
from typing import Any

OMITTED = ""
"""In an acceptable list, the empty string means the argument may be left out."""

_WS = re.compile(r"\s+")


def normalise(value: Any) -> Any:
    """The comparable form of a JSON value."""
    if isinstance(value, str):
        return _WS.sub(" ", value).strip().casefold()
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    return value


def _same_kind(a: Any, b: Any) -> bool:
    def kind(v: Any) -> str:
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, int | float):
            return "number"
        return type(v).__name__

    return kind(a) == kind(b)


def values_equal(actual: Any, expected: Any) -> bool:
    """Equality after normalisation, with JSON types respected recursively."""
    if not _same_kind(actual, expected):
        return False
    if isinstance(actual, list):
        return len(actual) == len(expected) and all(
            values_equal(a, e) for a, e in zip(actual, expected, strict=True)
        )
    if isinstance(actual, dict):
        return set(actual) == set(expected) and all(
            values_equal(actual[k], expected[k]) for k in actual
        )
    return bool(normalise(actual) == normalise(expected))


def matches(actual: Any, acceptable: Any) -> bool:
    """Whether ``actual`` satisfies one acceptable entry (a literal or a matcher object)."""
    if isinstance(acceptable, dict) and len(acceptable) == 1:
        ((key, arg),) = acceptable.items()
        if key == "$any":
            return bool(arg)
        if key == "$contains":
            if not isinstance(actual, str):
                return False
            text = normalise(actual)
            needles = arg if isinstance(arg, list) else [arg]
            return all(normalise(str(n)) in text for n in needles)
        if key == "$regex":
            return (
                isinstance(actual, str)
                and re.search(str(arg), actual, re.IGNORECASE | re.DOTALL) is not None
            )
    return values_equal(actual, acceptable)


def check_arguments(
    actual: dict[str, Any],
    expected: dict[str, list[Any]],
    required: frozenset[str] = frozenset(),
) -> list[str]:
    """Reasons the arguments fail (empty when they pass).

    ``required`` are the argument names the tool's schema requires; they must be present even
    when the expected call does not constrain them.
    """
    reasons: list[str] = []
    for name in sorted(actual):
        if name not in expected:
            reasons.append(f"unexpected argument {name!r}")
    for name in sorted(required):
        if name not in actual:
            reasons.append(f"required argument {name!r} missing")
    for name, acceptable in sorted(expected.items()):
        if name not in actual:
            if OMITTED not in acceptable and name not in required:
                reasons.append(f"argument {name!r} missing")
            continue
        value = actual[name]
        candidates = [a for a in acceptable if not (isinstance(a, str) and a == OMITTED)]
        if value == OMITTED and len(candidates) < len(acceptable):
            continue
        if not any(matches(value, a) for a in candidates):
            shown = repr(value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            reasons.append(f"argument {name!r}: {shown} is not an acceptable value")
    return reasons
