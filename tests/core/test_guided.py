"""Guided tool calling (sleuth.core.guided): the reply schema, its wire forms, parsing replies."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from sleuth.core import guided, guidedprompt
from sleuth.core.tools import DEFAULT_SPECS

pytestmark = pytest.mark.unit

TOOLS = [spec.to_openai() for spec in DEFAULT_SPECS.values()]


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_schema_is_valid_thought_then_decision_then_calls_or_an_answer() -> None:
    schema = guided.reply_schema(TOOLS)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert guided.schema_tool_names(schema) == list(DEFAULT_SPECS)
    assert guided.is_reply_schema(schema)
    # a left-to-right decoder writes the fields in this order: the thought before the decision,
    # the number of calls before the calls
    answer, *planned = schema["anyOf"]
    assert list(answer["properties"]) == ["thought", "needs_tool", "answer"]
    assert [list(b["properties"]) for b in planned] == [
        ["thought", "needs_tool", "calls_now", "tool_calls"]
    ] * guided.DEFAULT_MAX_CALLS
    assert all(b["required"] == list(b["properties"]) for b in schema["anyOf"])
    assert answer["properties"]["thought"]["maxLength"] == guided.THOUGHT_MAX_CHARS
    for n, branch in enumerate(planned, 1):  # calls_now says how long the list is
        calls = branch["properties"]["tool_calls"]
        assert branch["properties"]["calls_now"] == {"const": n}
        assert (calls["minItems"], calls["maxItems"]) == (n, n)
    for spec in DEFAULT_SPECS.values():  # each call carries that tool's own argument schema
        items = planned[0]["properties"]["tool_calls"]["items"]["anyOf"]
        branch = next(b for b in items if b["properties"]["name"]["const"] == spec.name)
        assert branch["properties"]["arguments"] == spec.parameters


SQL = {"name": "sql_query", "arguments": {"query": "SELECT 1", "params": []}}
WEB = {"name": "web_search", "arguments": {"query": "copper"}}


def _calls(*calls: dict[str, Any], thought: str = "x", n: int | None = None) -> dict[str, Any]:
    count = len(calls) if n is None else n
    return {"thought": thought, "needs_tool": True, "calls_now": count, "tool_calls": list(calls)}


@pytest.mark.parametrize(
    ("reply", "ok"),
    [
        (_calls(SQL, thought="A count."), True),
        (_calls(SQL, WEB, thought="Two parts."), True),
        ({"thought": "A greeting.", "needs_tool": False, "answer": "Hello."}, True),
        ({"thought": "x" * 161, "needs_tool": False, "answer": "Hello."}, False),  # too long
        ({"needs_tool": False, "answer": "Hello."}, False),  # no thought
        ({"thought": "x", "answer": "Hello."}, False),  # no decision
        ({"thought": "x", "needs_tool": True, "answer": "Hello."}, False),  # the wrong branch
        (_calls(SQL, n=2), False),  # calls_now and the list disagree
        (_calls(SQL, WEB, n=1), False),
        (SQL, False),  # the bare call of the earlier schema
        ({"tool_calls": [SQL]}, False),
        (_calls(), False),
        (_calls(WEB, WEB, WEB, WEB, WEB), False),
        (_calls({"name": "sql_query", "arguments": {"sql": "x"}}), False),
        (_calls({"name": "drop_table", "arguments": {}}), False),
        ({**_calls(SQL), "answer": "Hi"}, False),
        ({"thought": 3, "needs_tool": False, "answer": "Hi"}, False),
    ],
)
def test_the_schema_accepts_a_thought_a_decision_then_calls_or_an_answer_and_nothing_else(
    reply: Any, ok: bool
) -> None:
    assert _valid(guided.reply_schema(TOOLS), reply) is ok


def test_one_call_per_turn_caps_the_list_and_no_tools_leaves_the_answer() -> None:
    single = guided.reply_schema(TOOLS, max_calls=1)
    assert _valid(single, _calls(WEB))
    assert not _valid(single, _calls(WEB, WEB))
    assert guided.reply_schema([]) == guided.reply_schema([], 3)
    assert _valid(guided.reply_schema([]), {"thought": "x", "needs_tool": False, "answer": "y"})
    assert not _valid(guided.reply_schema([]), _calls(WEB))
    with pytest.raises(ValueError, match="max_calls"):
        guided.reply_schema(TOOLS, max_calls=0)


def test_the_instructions_follow_the_first_system_message_and_copy_the_list() -> None:
    system = {"role": "system", "content": "rules"}
    user = {"role": "user", "content": "q"}
    note = {"role": "system", "content": guidedprompt.reply_instructions(TOOLS)}
    given = [system, user]
    assert guidedprompt.with_reply_instructions(given, TOOLS) == [system, note, user]
    assert given == [system, user]
    assert guidedprompt.with_reply_instructions([user], TOOLS) == [note, user]
    for word in ('"thought"', '"needs_tool"', '"answer"', '"calls_now"', '"tool_calls"'):
        assert word in guidedprompt.REPLY_RULES


def _examples(text: str) -> list[tuple[str, dict[str, Any]]]:
    lines = text.split("\nExamples:\n", 1)[1].split("\n")
    return [
        (q.removeprefix("Q: "), json.loads(r)) for q, r in zip(lines[::2], lines[1::2], strict=True)
    ]


def test_every_example_is_a_reply_the_schema_accepts_and_each_branch_is_shown() -> None:
    schema = guided.reply_schema(TOOLS)
    examples = _examples(guidedprompt.reply_instructions(TOOLS))
    assert len(examples) == len(guidedprompt.EXAMPLES)
    for question, reply in examples:
        assert _valid(schema, reply), question
        assert len(reply["thought"]) <= guided.THOUGHT_MAX_CHARS
    shapes = [(r["needs_tool"], r.get("calls_now")) for _, r in examples]
    assert (False, None) in shapes
    assert (True, 1) in shapes
    assert (True, 2) in shapes
    # no-tool examples among the others, not all first (the model copies the first example)
    assert shapes[0] == (False, None)
    assert shapes[1][0] is True
    used = {c["name"] for _, r in examples for c in r.get("tool_calls", [])}
    assert used == set(DEFAULT_SPECS)


def test_examples_calling_a_tool_that_is_not_offered_are_left_out() -> None:
    only_docs = [t for t in TOOLS if t["function"]["name"] == "vector_search"]
    examples = _examples(guidedprompt.reply_instructions(only_docs))
    names = {c["name"] for _, r in examples for c in r.get("tool_calls", [])}
    assert names == {"vector_search"}
    assert any(not r["needs_tool"] for _, r in examples)  # the answer branch is always shown
    assert all(_valid(guided.reply_schema(only_docs), r) for _, r in examples)
    none = _examples(guidedprompt.reply_instructions([]))
    assert none
    assert all(not r["needs_tool"] for _, r in none)


def test_llama_cpp_turns_the_schema_into_a_grammar() -> None:
    """llama-cpp-python falls back to plain JSON, silently, on a schema it cannot convert."""
    grammar_module = pytest.importorskip("llama_cpp.llama_grammar")
    grammar = grammar_module.json_schema_to_gbnf(json.dumps(guided.reply_schema(TOOLS)))
    for name in DEFAULT_SPECS:
        assert f'"\\"{name}\\""' in grammar
    assert '"\\"thought\\""' in grammar


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


def test_replies_parse_into_a_thought_and_calls_with_ids_or_an_answer() -> None:
    one = guided.encode_calls([("sql_query", {"query": "SELECT 1"})], "A count.")
    assert json.loads(one) == _calls(
        {"name": "sql_query", "arguments": {"query": "SELECT 1"}}, thought="A count."
    )
    assert _valid(guided.reply_schema(TOOLS), json.loads(one))
    assert guided.parse_reply(one, 2) == guided.GuidedReply(
        "A count.", None, [("call_2_0", "sql_query", '{"query": "SELECT 1"}')]
    )
    two = guided.encode_calls([("sql_query", '{"query": "q"}'), ("web_search", {"query": "w"})])
    reply = guided.parse_reply(two, 0)
    assert (reply.thought, reply.answer) == (None, None)  # an empty thought is no thought
    assert [(i, n, json.loads(a)) for i, n, a in reply.calls] == [
        ("call_0_0", "sql_query", {"query": "q"}),
        ("call_0_1", "web_search", {"query": "w"}),
    ]
    answer = guided.encode_answer("47 contracts.", " The results say it. ")
    assert _valid(guided.reply_schema(TOOLS), json.loads(answer))
    said = guided.GuidedReply("The results say it.", "47 contracts.")
    assert guided.parse_reply(answer, 1) == said
    # llama.cpp's grammar lets raw newlines into strings; they are kept
    assert guided.parse_reply('{"thought": "t", "answer": "a\nb"}', 0).answer == "a\nb"
    # what a server that ignored the schema writes: no thought, a bare call
    assert guided.parse_reply('{"answer": "hi"}', 0) == guided.GuidedReply(None, "hi")
    bare = guided.parse_reply('{"name": "web_search", "arguments": {"query": "x"}}', 3)
    assert bare.calls == [("call_3_0", "web_search", '{"query": "x"}')]


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ('{"thought": "A greeting.", "needs_tool": false, "answer": "Hel', True),
        ('{"thought": "A greeting.", "needs_tool": false', True),
        (' { "answer": "cut', True),
        ('{"thought": "A count.", "needs_tool": true, "calls_now": 1, "tool_c', False),
        ('{"thought": "say \\"answer\\": no", "tool_calls": [{"name": "sql', False),
        ('{"thought": "A count", ', False),  # cut inside the thought: undecided
        ('{"thought": "A count.", "tool_calls": [{"name": "sql_query", "argu', False),
        ('{"name": "sql_query", "arguments": {"query": "SEL', False),
    ],
)
def test_a_cut_reply_had_chosen_the_answer_when_its_decision_after_the_thought_says_so(
    text: str, answer: bool
) -> None:
    assert guided.began_answer(text) is answer


@pytest.mark.parametrize(
    "text",
    [
        '{"thought": "A count.", "tool_calls": [{"name": "sql_query", "arguments": {"query": "SEL',
        "```json\n{}\n```",
        '["sql_query"]',
        '{"thought": "x", "needs_tool": true, "calls_now": 0, "tool_calls": []}',
        '{"thought": "x", "needs_tool": false}',
        '{"thought": "x", "answer": 3}',
        '{"thought": 3, "answer": "x"}',
        '{"thought": "x"}',
        '{"thought": "x", "tool_calls": [{"arguments": {}}]}',
        "",
    ],
)
def test_anything_else_is_a_guided_reply_error_keeping_the_text(text: str) -> None:
    with pytest.raises(guided.GuidedReplyError) as info:
        guided.parse_reply(text, 0)
    assert info.value.text == text.strip()
    assert not info.value.retryable
