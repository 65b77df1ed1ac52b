"""The one model client (sleuth.core.llm) over real HTTP: JSON mode, usage, and error kinds."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from sleuth.core.chatwire import MAX_STREAM_LINE
from sleuth.core.errors import ModelResponseError, ModelTimeout, ModelUnavailable
from sleuth.core.llm import ModelTurn, OpenAIChatModel
from sleuth.core.process import free_port
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer

pytestmark = pytest.mark.integration

ASK = [{"role": "user", "content": "Reply with JSON."}]


async def complete(url: str, **options: object) -> ModelTurn:
    model = OpenAIChatModel(url, "scripted", **options)  # type: ignore[arg-type]
    try:
        return await model.complete(ASK, [])
    finally:
        await model.aclose()


@pytest.mark.parametrize("stream", [False, True])
async def test_json_mode_plain_completion_reports_finish_reason_and_usage(stream: bool) -> None:
    answer = ScriptedResponse(content='{"a": 1}', completion_tokens=7, finish_reason="length")
    with ScriptedServer(Scenario(turns=[answer])) as server:
        turn = await complete(
            server.url, stream=stream, max_tokens=33, response_format={"type": "json_object"}
        )
        (body,) = server.requests()
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 33
    assert "tools" not in body
    assert "tool_choice" not in body
    assert turn.content == '{"a": 1}'
    assert turn.tool_calls == ()
    assert turn.finish_reason == "length"
    assert turn.completion_tokens == 7
    assert turn.prompt_tokens > 0


async def test_without_response_format_none_is_sent() -> None:
    with ScriptedServer(Scenario(turns=[ScriptedResponse(content="hi")])) as server:
        await complete(server.url, stream=False)
        (body,) = server.requests()
    assert "response_format" not in body


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (503, ModelUnavailable, True),
        (429, ModelUnavailable, True),
        (400, ModelResponseError, False),
    ],
)
async def test_an_http_error_says_its_status_and_whether_to_retry(
    status: int, kind: type[Exception], retryable: bool
) -> None:
    failing = ScriptedResponse(status=status, error_message="scripted refusal")
    with (
        ScriptedServer(Scenario(turns=[failing])) as server,
        pytest.raises(kind, match=f"answered {status}: scripted refusal") as info,
    ):
        await complete(server.url, stream=False)
    assert getattr(info.value, "status", None) == status
    assert getattr(info.value, "retryable", None) is retryable


async def test_no_answer_within_the_timeout_is_a_retryable_model_timeout() -> None:
    slow = ScriptedResponse(content="late", delay_ms=3000)
    with (
        ScriptedServer(Scenario(turns=[slow])) as server,
        pytest.raises(ModelTimeout, match=r"timed out after 0.3 s") as info,
    ):
        await complete(server.url, stream=False, timeout_s=0.3)
    assert info.value.retryable is True
    assert info.value.status is None


async def test_an_unreachable_server_is_retryable_and_not_a_timeout() -> None:
    with pytest.raises(ModelUnavailable, match="unreachable") as info:
        await complete(f"http://127.0.0.1:{free_port()}/v1", stream=False)
    assert not isinstance(info.value, ModelTimeout)
    assert info.value.retryable is True
    assert info.value.status is None


GUIDED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }
    for name in ("sql_query", "vector_search")
]


async def _guided(url: str, messages: list[dict[str, object]], **options: object) -> ModelTurn:
    model = OpenAIChatModel(url, "scripted", tool_calling="guided", **options)  # type: ignore[arg-type]
    try:
        return await model.complete(messages, GUIDED_TOOLS)  # type: ignore[arg-type]
    finally:
        await model.aclose()


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fmt", ["json_schema", "json_object"])
async def test_guided_calls_come_back_as_native_tool_calls_with_ids(stream: bool, fmt: str) -> None:
    from sleuth.core.guided import reply_schema, schema_of_request
    from sleuth.core.guidedprompt import reply_instructions
    from sleuth.scripted import ScriptedToolCall

    calls = [
        ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"}),
        ScriptedToolCall(name="vector_search", arguments={"query": "clauses"}),
    ]
    history = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "earlier"}]
    scripted = ScriptedResponse(tool_calls=calls, thought="Numbers and clauses: both at once.")
    scenario = Scenario(turns=[ScriptedResponse(), scripted])
    with ScriptedServer(scenario) as server:
        turn = await _guided(server.url, history, stream=stream, guided_format=fmt)
        (body,) = server.requests()
    assert body["tools"] == GUIDED_TOOLS  # the chat template renders them as the model knows
    assert body["tool_choice"] == "none"  # the schema decides, no server-side parsing
    assert body["response_format"]["type"] == fmt
    assert schema_of_request(body) == reply_schema(GUIDED_TOOLS)
    assert [(c.id, c.name, c.arguments_text) for c in turn.tool_calls] == [
        ("call_1_0", "sql_query", '{"query": "SELECT 1"}'),
        ("call_1_1", "vector_search", '{"query": "clauses"}'),
    ]
    assert turn.content is None
    assert turn.thought == "Numbers and clauses: both at once."
    assert turn.finish_reason == "tool_calls"
    # the model is told the forms, after the conversation's system message, as a system message
    note = reply_instructions(GUIDED_TOOLS)  # the examples of the tools offered, no web_search
    assert body["messages"][:-2] == [{"role": "system", "content": note}]
    assert '"vector_search"' in note
    assert '"web_search"' not in note
    assert body["messages"][-2:] == history
    # the thought is the text of the calls' assistant message: the next turn sees the plan
    assert turn.assistant_message()["content"] == "Numbers and clauses: both at once."


async def test_a_guided_answer_is_the_turn_content_and_its_thought_is_not() -> None:
    from sleuth.core.guidedprompt import reply_instructions

    reply = ScriptedResponse(content="47 contracts.", thought="The results answer it.")
    system = {"role": "system", "content": "You answer questions."}
    with ScriptedServer(Scenario(turns=[reply])) as server:
        turn = await _guided(server.url, [system, *ASK], stream=True)
        (body,) = server.requests()
    assert turn.content == "47 contracts."
    assert turn.thought == "The results answer it."
    assert turn.tool_calls == ()
    assert turn.assistant_message()["content"] == "47 contracts."
    assert turn.extra["guided_text"] == (
        '{"thought": "The results answer it.", "needs_tool": false, "answer": "47 contracts."}'
    )
    assert [m["content"] for m in body["messages"]] == [  # the system prompt stays first
        "You answer questions.",
        reply_instructions(GUIDED_TOOLS),
        ASK[0]["content"],
    ]


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (ScriptedResponse(content='{"name": "sql_q', raw=True), "not JSON"),
        (ScriptedResponse(content="I would call sql_query.", raw=True), "not JSON"),
        (
            ScriptedResponse(
                content='{"thought": "Hi.", "answer": "cut', raw=True, finish_reason="length"
            ),
            "max_tokens",
        ),
    ],
)
async def test_a_guided_reply_that_does_not_parse_is_a_guided_reply_error(
    reply: ScriptedResponse, match: str
) -> None:
    from sleuth.core.guided import GuidedReplyError

    with (
        ScriptedServer(Scenario(turns=[reply])) as server,
        pytest.raises(GuidedReplyError, match=match) as info,
    ):
        await _guided(server.url, list(ASK), stream=False)
    assert info.value.text == reply.content
    assert not info.value.retryable


def test_guided_and_a_response_format_are_exclusive() -> None:
    with pytest.raises(ValueError, match="exclusive"):
        OpenAIChatModel("http://x/v1", "m", tool_calling="guided", response_format={"type": "x"})


async def _serve_sse(pieces: list[bytes]) -> tuple[str, asyncio.Server]:
    """A model server that answers any request with ``pieces`` of an event stream, each its
    own write (so the client sees lines cut anywhere), then closes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = re.search(rb"(?i)content-length: *(\d+)", head)
        await reader.readexactly(int(length.group(1)) if length else 0)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
        writer.write(b"Connection: close\r\n\r\n")
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0)
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return f"http://127.0.0.1:{port}/v1", server


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


async def _stream_turn(pieces: list[bytes]) -> ModelTurn:
    url, server = await _serve_sse(pieces)
    async with server:
        return await complete(url, stream=True)


async def test_stream_lines_cut_at_every_byte_still_make_the_turn() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "sql_query", "arguments": '{"q": 1}'}}
    body = _event({"content": "Thinking, "}) + _event({"tool_calls": [call]}, "tool_calls")
    turn = await _stream_turn([body[i : i + 1] for i in range(len(body))] + [b"data: [DONE]\n\n"])
    assert turn.content == "Thinking, "
    assert [(c.id, c.name, c.arguments_text) for c in turn.tool_calls] == [
        ("c1", "sql_query", '{"q": 1}')
    ]
    assert turn.finish_reason == "tool_calls"


async def test_a_long_stream_line_is_read_and_one_past_the_bound_is_the_servers_error() -> None:
    text = "x" * 600_000  # one event over the HTTP client's own 128 KiB line limit
    long = _event({"content": text}, "stop")
    turn = await _stream_turn([long[i : i + 65536] for i in range(0, len(long), 65536)])
    assert turn.content == text
    huge = _event({"content": "x" * (MAX_STREAM_LINE + 1)}, "stop")
    with pytest.raises(ModelResponseError, match=f"over {MAX_STREAM_LINE} bytes") as info:
        await _stream_turn([huge[i : i + 65536] for i in range(0, len(huge), 65536)])
    assert "xxxx" not in str(info.value)
