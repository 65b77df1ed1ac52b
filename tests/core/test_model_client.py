"""The one model client (sleuth.core.llm) over real HTTP: JSON mode, usage, and error kinds."""

from __future__ import annotations

import pytest

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
