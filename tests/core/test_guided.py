"""Guided tool calling (sleuth.core.guided): the reply schema, its wire forms, parsing replies."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from sleuth.core import guided
from sleuth.core.tools import DEFAULT_SPECS

pytestmark = pytest.mark.unit

TOOLS = [spec.to_openai() for spec in DEFAULT_SPECS.values()]


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_schema_is_valid_and_has_a_branch_per_tool_a_list_and_an_answer() -> None:
    schema = guided.reply_schema(TOOLS)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert guided.schema_tool_names(schema) == list(DEFAULT_SPECS)
    assert guided.is_reply_schema(schema)
    for spec in DEFAULT_SPECS.values():  # each branch carries that tool's own argument schema
        branch = next(
            b for b in schema["anyOf"] if b["properties"].get("name", {}).get("const") == spec.name
        )
        assert branch["properties"]["arguments"] == spec.parameters


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        ({"name": "sql_query", "arguments": {"query": "SELECT 1", "params": []}}, True),
        ({"tool_calls": [{"name": "web_search", "arguments": {"query": "copper"}}] * 2}, True),
        ({"answer": "Hello."}, True),
        ({"name": "sql_query", "arguments": {"sql": "SELECT 1"}}, False),  # not its argument
        ({"name": "vector_search", "arguments": {"query": "x", "top_k": "5"}}, False),
        ({"name": "drop_table", "arguments": {}}, False),  # not a bound tool
        ({"tool_calls": [{"name": "web_search", "arguments": {"query": "x"}}] * 5}, False),
        ({"answer": "Hi", "name": "sql_query"}, False),
        ({"tool_calls": []}, False),
    ],
)
def test_the_schema_accepts_the_three_forms_and_nothing_else(reply: Any, ok: bool) -> None:
    assert _valid(guided.reply_schema(TOOLS), reply) is ok


def test_one_call_per_turn_drops_the_list_and_no_tools_leaves_the_answer() -> None:
    single = guided.reply_schema(TOOLS, max_calls=1)
    assert not any("tool_calls" in b["properties"] for b in single["anyOf"])
    assert not _valid(single, {"tool_calls": [{"name": "web_search", "arguments": {"query": "x"}}]})
    assert guided.reply_schema([]) == guided.reply_schema([], 3)
    assert _valid(guided.reply_schema([]), {"answer": "x"})
    with pytest.raises(ValueError, match="max_calls"):
        guided.reply_schema(TOOLS, max_calls=0)


def test_llama_cpp_turns_the_schema_into_a_grammar() -> None:
    """llama-cpp-python falls back to plain JSON, silently, on a schema it cannot convert."""
    grammar_module = pytest.importorskip("llama_cpp.llama_grammar")
    grammar = grammar_module.json_schema_to_gbnf(json.dumps(guided.reply_schema(TOOLS)))
    for name in DEFAULT_SPECS:
        assert f'"\\"{name}\\""' in grammar


def test_both_wire_forms_carry_the_schema_and_are_read_back() -> None:
    schema = guided.reply_schema(TOOLS)
    for fmt in ("json_schema", "json_object"):
        body = {"response_format": guided.response_format(schema, fmt)}  # type: ignore[arg-type]
        assert guided.schema_of_request(body) == schema
    assert guided.response_format(schema, "json_schema")["type"] == "json_schema"
    assert guided.response_format(schema, "json_object") == {
        "type": "json_object",
        "schema": schema,
    }
    assert guided.schema_of_request({"response_format": {"type": "json_object"}}) is None
    assert guided.schema_of_request({}) is None


def test_replies_parse_into_calls_with_ids_or_an_answer() -> None:
    one = guided.encode_calls([("sql_query", {"query": "SELECT 1"})])
    assert json.loads(one) == {"name": "sql_query", "arguments": {"query": "SELECT 1"}}
    assert guided.parse_reply(one, 2) == (
        None,
        [("call_2_0", "sql_query", '{"query": "SELECT 1"}')],
    )
    two = guided.encode_calls([("sql_query", '{"query": "q"}'), ("web_search", {"query": "w"})])
    answer, calls = guided.parse_reply(two, 0)
    assert answer is None
    assert [(i, n, json.loads(a)) for i, n, a in calls] == [
        ("call_0_0", "sql_query", {"query": "q"}),
        ("call_0_1", "web_search", {"query": "w"}),
    ]
    assert guided.parse_reply(guided.encode_answer("47 contracts."), 1) == ("47 contracts.", [])
    # llama.cpp's grammar lets raw newlines into strings; they are kept
    assert guided.parse_reply('{"answer": "a\nb"}', 0) == ("a\nb", [])


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "sql_query", "arguments": {"query": "SEL',  # cut
        "```json\n{}\n```",
        '["sql_query"]',
        '{"tool_calls": []}',
        '{"answer": 3}',
        '{"tool_calls": [{"arguments": {}}]}',
        "",
    ],
)
def test_anything_else_is_a_guided_reply_error_keeping_the_text(text: str) -> None:
    with pytest.raises(guided.GuidedReplyError) as info:
        guided.parse_reply(text, 0)
    assert info.value.text == text.strip()
    assert not info.value.retryable
