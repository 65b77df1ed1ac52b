"""Hypothesis strategies and checks for fuzzing sleuth's HTTP services from outside.

What a client can send: arbitrary bytes, arbitrary JSON (text with lone surrogates, ``NaN``,
huge numbers, deep nesting included), and valid requests with one part replaced by arbitrary
JSON — the last reaches past the parser into each route's validation. What it must get back:
never a 5xx, and every error in the documented shape (:func:`check_response`).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import strategies as st

SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
TEXT = st.one_of(
    st.text(max_size=12),
    st.tuples(st.text(max_size=6), SURROGATE, st.text(max_size=6)).map("".join),
    st.sampled_from(["", " ", "\x00", "user", "assistant", "text", "SELECT 1", "\U0001f600"]),
)
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**40),
    st.floats(),  # NaN and infinities too: json.dumps writes NaN / Infinity
    TEXT,
)
JSON = st.recursive(
    SCALAR,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=16,
)


def dumps(value: Any) -> bytes:
    """JSON text as a client would send it (lone surrogates as ``\\ud800`` escapes)."""
    return json.dumps(value).encode()


_MARK = "\x00sleuth-fuzz-deep\x00"  # where a mutation puts deep nesting


def _nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


DEEP = st.one_of(
    st.integers(60, 5000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(60, 5000).map(_nested),
    st.integers(60, 5000).map(lambda n: b"[" * n),  # never closed
)


@st.composite
def mutated(draw: st.DrawFn, template: Any) -> Any:
    """``template`` (a valid request) with one value replaced by arbitrary JSON, one key
    dropped, or one key added."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(value, dict):
            for key, child in value.items():
                walk(child, (*path, key))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, (*path, index))

    walk(template, ())
    path = draw(st.sampled_from(paths))
    copy = json.loads(json.dumps(template))
    if not path:
        return draw(JSON)
    parent = copy
    for part in path[:-1]:
        parent = parent[part]
    action = draw(st.sampled_from(["replace", "replace", "drop", "add"]))
    if action == "replace":
        parent[path[-1]] = draw(JSON | st.just(_MARK))
    elif action == "drop":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(TEXT)] = draw(JSON)
    else:
        parent.append(draw(JSON))
    return copy


@st.composite
def _mutated_bytes(draw: st.DrawFn, templates: list[Any]) -> bytes:
    """A mutated request as bytes; where the mutation chose the mark, deep nesting goes in."""
    raw = dumps(draw(mutated(draw(st.sampled_from(templates)))))
    mark = dumps(_MARK)
    return raw.replace(mark, draw(DEEP)) if mark in raw else raw


def bodies(templates: list[Any]) -> st.SearchStrategy[bytes]:
    """Request bodies: bytes, JSON, deep nesting, valid requests mutated (deep nesting too)."""
    return st.one_of(
        st.binary(max_size=64),
        JSON.map(dumps),
        DEEP,
        _mutated_bytes(templates),
        st.sampled_from(templates).map(dumps),
    )


CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "", "text/plain", "application/x+json"]
)


def check_response(response: httpx.Response, *, jsonrpc: bool = False) -> None:
    """No 5xx; an error is JSON in the shape of :mod:`sleuth.core.http.error_shapes`, or — on a
    JSON-RPC route — a JSON-RPC error object; any JSON body is valid UTF-8."""
    assert response.status_code < 500, f"{response.status_code}: {response.text[:500]}"
    content_type = response.headers.get("content-type", "")
    # strict UTF-8: a lone surrogate in a response fails here
    # (an empty body is no JSON: MCP answers a notification 202 with none)
    is_json = "json" in content_type and response.content
    body = json.loads(response.content.decode("utf-8")) if is_json else None
    if response.status_code < 400:
        return
    assert body is not None, f"{response.status_code} without a JSON body: {response.text[:200]}"
    if jsonrpc and "jsonrpc" in body:
        assert body["jsonrpc"] == "2.0"
        assert isinstance(body["error"]["code"], int)
        assert isinstance(body["error"]["message"], str)
        return
    error = body["error"]
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["type"], str)
    assert error["field"] is None or isinstance(error["field"], str)


__all__ = ["CONTENT_TYPES", "DEEP", "JSON", "TEXT", "bodies", "check_response", "dumps", "mutated"]
