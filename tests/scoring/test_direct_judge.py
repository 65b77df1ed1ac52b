"""The direct judge over the one model client: verdicts, the report's failure reasons, the limit."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import BaseModel

from sleuth.core.process import free_port
from sleuth.scoring.errors import JudgeError
from sleuth.scoring.judge import JudgeBundle, JudgeConfig, build_judge
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer

pytestmark = pytest.mark.integration


class Verdict(BaseModel):
    verdict: int


def judge(url: str, **cfg: object) -> JudgeBundle:
    return build_judge(JudgeConfig(base_url=url, model="judge", **cfg))  # type: ignore[arg-type]


async def test_a_verdict_is_validated_metered_and_counted_against_the_limit() -> None:
    answer = ScriptedResponse(content='Here: {"verdict": 1}', completion_tokens=5)
    with ScriptedServer(Scenario(turns=[answer])) as server:
        bundle = judge(server.url, max_tokens=300)
        try:
            assert await bundle.llm.agenerate("Is it supported?", Verdict) == Verdict(verdict=1)
        finally:
            await bundle.aclose()
        (body,) = server.requests()
    assert body["model"] == "judge"
    assert body["response_format"] == {"type": "json_object"}
    assert body["max_tokens"] == 300
    assert not body.get("stream")
    assert '"title": "Verdict"' in body["messages"][0]["content"]  # the schema, in the system
    usage = bundle.meter.to_json()
    assert usage["judge_requests"] == 1
    assert usage["completion_tokens"] == 5
    assert usage["prompt_tokens"] > 0
    assert bundle.limits[0].chat_requests == 1


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        (ScriptedResponse(status=400, error_message="unknown model"), "http_400"),
        (ScriptedResponse(status=503, error_message="overloaded"), "http_503"),
        (ScriptedResponse(content='{"verdict": ', finish_reason="length"), "truncated"),
    ],
)
async def test_a_failed_call_has_the_reason_the_report_shows(
    response: ScriptedResponse, reason: str
) -> None:
    with ScriptedServer(Scenario(turns=[response])) as server:
        bundle = judge(server.url, max_tokens=300)
        try:
            with pytest.raises(JudgeError) as info:
                await bundle.llm.agenerate("Is it supported?", Verdict)
        finally:
            await bundle.aclose()
        assert len(server.requests()) == 1  # a failed call is not asked again
    assert info.value.reason == reason
    assert bundle.meter.to_json()["judge_requests"] == 1  # the server answered: counted
    if reason == "truncated":
        assert "max_tokens=300" in str(info.value)


async def test_an_unreachable_judge_is_a_connection_failure() -> None:
    bundle = judge(f"http://127.0.0.1:{free_port()}/v1")
    try:
        with pytest.raises(JudgeError) as info:
            await bundle.llm.agenerate("Is it supported?", Verdict)
    finally:
        await bundle.aclose()
    assert info.value.reason == "connection"
    assert bundle.meter.to_json()["judge_requests"] == 0


async def test_the_limit_queues_calls_and_the_wait_is_not_timed() -> None:
    """Six 200 ms calls through one slot take over 1.2 s in all, while each gets 1 s."""
    answer = ScriptedResponse(content='{"verdict": 0}', delay_ms=200)
    with ScriptedServer(Scenario(turns=[answer])) as server:
        bundle = judge(server.url, concurrency=1, timeout_s=1.0)
        try:
            started = time.perf_counter()
            verdicts = await asyncio.gather(
                *(bundle.llm.agenerate(f"claim {i}", Verdict) for i in range(6))
            )
            elapsed = time.perf_counter() - started
        finally:
            await bundle.aclose()
    assert verdicts == [Verdict(verdict=0)] * 6
    assert elapsed >= 1.2
    assert bundle.limits[0].chat_requests == 6
