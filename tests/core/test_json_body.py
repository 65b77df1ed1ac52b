"""sleuth.core.http.json_body: the nesting pre-scan agrees with the parsed structure, deep and
malformed bodies are refused before json.loads recurses, lone surrogates are found by path."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.core.http.json_body import (
    MAX_JSON_DEPTH,
    JsonBodyError,
    nests_deeper_than,
    parse_json_body,
)

pytestmark = pytest.mark.unit

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab[]{}"\\,: ', max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet='k[{"\\', max_size=3), children, max_size=3)
    ),
    max_leaves=40,
)


def _depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


def _tower(depth: int) -> Any:
    value: Any = "leaf [{"
    for i in range(depth):
        value = [value] if i % 2 else {"k]": value}
    return value


@settings(max_examples=300, deadline=None)
@given(JSON | st.integers(0, 80).map(_tower), st.integers(0, 12))
def test_the_pre_scan_agrees_with_the_structure(value: Any, limit: int) -> None:
    raw = json.dumps(value).encode()
    assert nests_deeper_than(raw, limit) == (_depth(value) > limit)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
def test_the_limit_is_64_levels(depth: int) -> None:
    raw = json.dumps({"question": "x", "history": _tower(depth - 1)}).encode()
    if depth <= MAX_JSON_DEPTH:
        assert parse_json_body(raw)["question"] == "x"
        return
    with pytest.raises(JsonBodyError, match="more than 64 levels") as err:
        parse_json_body(raw)
    assert (err.value.status, err.value.field) == (400, None)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"question":"x","history":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"question":"x","history":' + b"[" * 100_000,  # never closed
        b'{"a":' + b'{"b":' * 50_000 + b"1" + b"}" * 50_001,
    ],
    ids=["arrays", "never-closed", "objects"],
)
def test_a_deep_body_is_refused_before_it_is_parsed(raw: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(JsonBodyError, match="levels deep"):
        parse_json_body(raw)
    assert time.perf_counter() - started < 1.0  # the pre-scan stops early; no recursion


def test_brackets_inside_strings_do_not_count() -> None:
    raw = json.dumps({"question": "[" * 10_000 + '\\"{' * 1000}).encode()
    assert parse_json_body(raw)["question"].startswith("[[[")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'{"question":"\\ud800 x"}', "question"),
        (b'{"question":"q","history":[{"role":"user","content":"\\udfff"}]}', "history.0.content"),
        (
            b'{"messages":[{"role":"user","content":[{"type":"text","text":"a"},'
            b'{"type":"text","text":"\\ud83d"}]}]}',
            "messages.0.content.1.text",
        ),
        (b'{"question":"q","\\udc00x":1}', "\\udc00x"),  # a key: named by its escape
    ],
)
def test_a_lone_surrogate_is_refused_naming_its_field(raw: bytes, field: str) -> None:
    with pytest.raises(JsonBodyError, match="lone UTF-16 surrogate") as err:
        parse_json_body(raw)
    assert (err.value.status, err.value.field) == (422, field)
    assert str(err.value).startswith(f"{field}: ")
    str(err.value).encode("utf-8")  # the message itself can be sent


def test_a_surrogate_pair_is_a_character() -> None:
    assert parse_json_body(b'{"q":"\\ud83d\\ude00"}') == {"q": "\N{GRINNING FACE}"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"q": "\xff"}', "not UTF-8 at byte 7"),
        (b'{"q": "\xed\xa0\x80"}', "not UTF-8"),  # a UTF-8-encoded surrogate (json.loads takes it)
        (b'{"q": NaN}', "NaN is not JSON"),
        (b'{"q": -Infinity}', "-Infinity is not JSON"),
        (b'{"q": 1e400}', "beyond the range of a double"),
        (b'{"q": ' + b"9" * 5000 + b"}", "not valid JSON"),
        (b'{"q": 1,}', "line 1, column 9"),
    ],
    ids=["not-utf8", "surrogate", "nan", "infinity", "1e400", "5000-digits", "trailing-comma"],
)
def test_what_no_response_could_carry_is_a_400(raw: bytes, message: str) -> None:
    with pytest.raises(JsonBodyError, match=message) as err:
        parse_json_body(raw)
    assert err.value.status == 400


def test_a_byte_order_mark_is_skipped() -> None:
    assert parse_json_body(b'\xef\xbb\xbf{"q": 1}') == {"q": 1}
