"""The model client's stream parser holds its contract for every byte sequence: a turn, or a
ModelError — never another exception (which the agent would turn into a plain HTTP 500)."""

from __future__ import annotations

import contextlib
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth.core.chatwire import StreamParser, parse_body
from sleuth.core.errors import ModelError, ModelResponseError, ModelUnavailable

pytestmark = pytest.mark.unit

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(
        st.sampled_from(
            ["choices", "delta", "content", "tool_calls", "index", "id", "function", "name",
             "arguments", "finish_reason", "usage", "prompt_tokens", "completion_tokens"]
        ),
        children,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip
LINE = (
    st.binary(max_size=40).map(lambda b: b"data: " + b)
    | JSON.map(lambda v: b"data: " + json.dumps(v).encode())
    | st.just(b"data: [DONE]")
    | st.binary(max_size=20)
)


def _parse(lines: list[bytes]) -> object:
    parser = StreamParser(time.perf_counter())
    for line in lines:
        parser.feed(line)
    return parser.turn()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINE, max_size=8))
def test_any_stream_gives_a_turn_or_a_model_error(lines: list[bytes]) -> None:
    with contextlib.suppress(ModelError):
        _parse(lines)


@settings(max_examples=300, deadline=None)
@given(JSON.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40))
def test_any_body_gives_a_turn_or_a_model_error(raw: bytes) -> None:
    with contextlib.suppress(ModelError):
        parse_body(raw)


def _chunk(**delta: object) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": delta}]}).encode()


@pytest.mark.parametrize(
    "line",
    [
        b"data: \xff\xfe not utf-8",
        b"data: [1, 2]",
        b'data: {"choices": [{"delta": ["a"]}]}',
        _chunk(tool_calls=[{"index": "zero", "function": {"name": "sql_query"}}]),
        b'data: {"choices": [], "usage": {"prompt_tokens": "many"}}',
    ],
)
def test_the_reported_malformed_chunks_are_model_response_errors(line: bytes) -> None:
    with pytest.raises(ModelResponseError):
        _parse([line, b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}'])


@pytest.mark.parametrize(
    "line",
    [
        b'data: {"choices": [], "usage": {"prompt_tokens": NaN}}',
        b'data: {"choices": [], "usage": {"completion_tokens": 1e400}}',
        b"data: " + b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["nan", "1e400", "deep"],
)
def test_numbers_and_nesting_no_turn_can_hold_are_model_response_errors(line: bytes) -> None:
    with pytest.raises(ModelResponseError):
        _parse([line, b'data: {"choices": [{"delta": {}, "finish_reason": "stop"}]}'])


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b"data: The answer \xff\xfe\x80 ends here", "not UTF-8 (invalid byte at offset 11)"),
        (b"data: <html>upstream 10.0.0.7:8000 failed</html>", "not JSON (Expecting value)"),
    ],
)
def test_a_bad_chunk_is_described_not_echoed(line: bytes, said: str) -> None:
    """The message reaches the answer and the trace: what was wrong, not the bytes (issue 34)."""
    with pytest.raises(ModelResponseError) as err:
        _parse([line])
    assert said in str(err.value)
    assert "answer" not in str(err.value)
    assert "10.0.0.7" not in str(err.value)
    assert "\\x" not in str(err.value)


def test_a_cut_stream_is_a_retryable_error_not_an_answer() -> None:
    with pytest.raises(ModelUnavailable, match="cut") as err:
        _parse([_chunk(content="The penalty is 2% per")])
    assert err.value.retryable


def test_a_complete_stream_still_parses() -> None:
    turn = _parse(
        [
            _chunk(content="47 "),
            _chunk(tool_calls=[{"index": 0, "id": "c1", "function": {"name": "sql_query"}}]),
            _chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"q": 1}'}}]),
            b'data: {"choices": [{"delta": {}, "finish_reason": "tool_calls"}], '
            b'"usage": {"prompt_tokens": 10, "completion_tokens": 3}}',
            b"data: [DONE]",
        ]
    )
    assert turn.content == "47 "  # type: ignore[attr-defined]
    (call,) = turn.tool_calls  # type: ignore[attr-defined]
    assert (call.id, call.name, call.arguments_text) == ("c1", "sql_query", '{"q": 1}')
    assert turn.prompt_tokens == 10  # type: ignore[attr-defined]
