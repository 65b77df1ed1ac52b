"""A JSON request body read the same way by every sleuth service: bounded, strict, valid text.

:func:`parse_json_body` turns the bytes of a request body into a Python value, or raises
:class:`JsonBodyError` with the status a client gets and the field at fault:

1. **UTF-8.** The body must be UTF-8 (RFC 8259; a leading byte-order mark is skipped), else 400.
   Strictly: UTF-8-encoded surrogates (``ED A0 80``), which Python's own ``json.loads(bytes)``
   lets through, are refused.
2. **Nesting.** Arrays and objects may nest at most :data:`MAX_JSON_DEPTH` (64) levels, else 400
   *before* the text is parsed: the standard parser recurses once per level and fails with
   ``RecursionError`` near a thousand. The check is a pre-scan of the bytes —
   string literals removed by one regular expression, brackets counted — and costs nothing when
   the body holds fewer brackets than the limit (every ordinary request).
3. **Syntax.** The text must be JSON (400, with line and column); ``NaN``, ``Infinity`` and
   numbers beyond a double's range (``1e400``) are refused too: no response could carry them.
4. **Text.** No string — key or value — may hold a lone UTF-16 surrogate (``"\\ud800"``): it is
   no character, and the first attempt to encode it (a model request, a SQL parameter, the
   response itself) would fail. 422, naming the field by its dotted path
   (``messages.0.content.1.text``).

A service turns the error into its own shape: the error body of
:mod:`sleuth.core.http.error_shapes` on JSON routes, a JSON-RPC error on JSON-RPC routes
(:mod:`sleuth.core.http.jsonrpc_intake`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

MAX_JSON_DEPTH = 64

# A JSON string literal (the unrolled form: no backtracking on long strings).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Brackets only, both kinds folded into one: "[" opens, "]" closes.
_FOLD = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = tuple(1 if b == ord("[") else -1 if b == ord("]") else 0 for b in range(256))
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonBodyError(ValueError):
    """The body cannot be accepted; ``status`` (400 or 422) and ``field`` (or None) say why."""

    def __init__(self, message: str, *, status: int = 400, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def _deeper(brackets: bytes, limit: int) -> bool:
    """True when the running count of ``[`` minus ``]`` passes ``limit``: computed in C
    (``accumulate``), a slice at a time (growing from 1 KiB), stopping at the first slice that
    passes: a body that is deep from its start is refused after a few thousand brackets."""
    if limit < 0:
        return True
    depth, start, size = 0, 0, 1024
    while start < len(brackets):
        piece = brackets[start : start + size]
        sums = list(accumulate(map(_STEP.__getitem__, piece), initial=depth))
        if max(sums) > limit:
            return True
        depth, start, size = sums[-1], start + size, min(size * 2, 65536)
    return False


def nests_deeper_than(raw: bytes, limit: int) -> bool:
    """True when arrays and objects in ``raw`` nest more than ``limit`` levels.

    Exact for a body that parses; for other bytes never below the depth a parser reaches before
    it fails. String literals are cut out (one regular expression), brackets folded to ``[``
    and ``]``, everything else dropped, and the running depth counted. Two shortcuts keep it
    cheap: a body with at most ``limit`` brackets cannot nest deeper (no scan at all), and
    deleting every innermost pair ``[]`` first (most brackets of a real body are leaves:
    ``{"role": ..., "content": ...}``) lowers the depth by at most one, so the full count runs
    only when that leaves it at ``limit``.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", raw).translate(_FOLD, _NOT_BRACKETS)
    if _deeper(brackets.replace(b"[]", b""), limit - 1):
        return _deeper(brackets, limit)
    return False


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonBodyError(f"the number {text[:40]} is beyond the range of a double")
    return value


def _constant(name: str) -> Any:
    raise JsonBodyError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _strings(value: Any) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string of a parsed body, keys included, with its path, in document order (the
    nesting is bounded already, but a stack keeps this free of recursion anyway)."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key in item:
                yield (*where, key), key
            stack.extend(((*where, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*where, str(i)), item[i]) for i in reversed(range(len(item))))


def _printable(part: str) -> str:
    """A path element that can be written out: lone surrogates as ``\\udXXX`` escapes."""
    return part.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_field(value: Any) -> str | None:
    """The dotted path of the first string in ``value`` holding a lone surrogate (``""`` for a
    top-level string), else None."""
    for where, text in _strings(value):
        if _SURROGATE.search(text):
            return ".".join(_printable(part) for part in where)
    return None


def parse_json_body(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``raw`` parsed, or :class:`JsonBodyError` (see the module's docstring)."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise JsonBodyError(f"the body is not valid JSON (not UTF-8 at byte {err.start})") from None
    if nests_deeper_than(raw, max_depth):
        raise JsonBodyError(
            f"the body nests arrays and objects more than {max_depth} levels deep; at most "
            f"{max_depth} are accepted"
        )
    try:
        data = json.loads(text, parse_float=_finite, parse_constant=_constant)
    except JsonBodyError:
        raise
    except json.JSONDecodeError as err:
        raise JsonBodyError(
            f"the body is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise JsonBodyError(f"the body is not valid JSON ({str(err)[:120]})") from None
    if "\\u" in text:  # strict UTF-8 holds no surrogate: only an escape makes one
        field = lone_surrogate_field(data)
        if field is not None:
            label = f"{field}: " if field else ""
            raise JsonBodyError(
                f"{label}the text holds a lone UTF-16 surrogate (an escape such as \\ud800 "
                "without its pair), which is not a character; send valid Unicode",
                status=422,
                field=field or None,
            )
    return data


__all__ = [
    "MAX_JSON_DEPTH",
    "JsonBodyError",
    "lone_surrogate_field",
    "nests_deeper_than",
    "parse_json_body",
]
