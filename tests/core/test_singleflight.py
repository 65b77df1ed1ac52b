"""Single flight: identical calls in flight share one execution; abandoned work is cancelled only
when nobody waits for it any more. And the tool runner built on it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from sleuth.agent.toolrun import BoundTool, Conversation, ToolRunner
from sleuth.core.llm import ToolCallRequest
from sleuth.core.singleflight import SingleFlight
from sleuth.core.tools import ToolSpec
from sleuth.tools.base import ToolMisconfigured, ToolOutput

pytestmark = pytest.mark.unit


@dataclass
class Counting:
    """An execution that waits for ``release`` and counts its starts and cancellations."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    started: int = 0
    cancelled: int = 0

    async def __call__(self) -> str:
        self.started += 1
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "result"


async def test_concurrent_callers_share_one_execution() -> None:
    flights: SingleFlight[str] = SingleFlight()
    work = Counting()
    callers = [asyncio.ensure_future(flights.run("k", work)) for _ in range(10)]
    await asyncio.sleep(0.01)
    work.release.set()
    results = await asyncio.gather(*callers)
    assert work.started == 1
    assert [r for r, _ in results] == ["result"] * 10
    assert sorted(shared for _, shared in results) == [False] + [True] * 9
    assert len(flights) == 0  # nothing kept once it ended


async def test_a_caller_that_gives_up_leaves_the_others_their_execution() -> None:
    flights: SingleFlight[str] = SingleFlight()
    work = Counting()
    first = asyncio.ensure_future(flights.run("k", work))
    second = asyncio.ensure_future(flights.run("k", work))
    await asyncio.sleep(0.01)
    first.cancel()  # e.g. its tool timeout
    await asyncio.sleep(0.01)
    assert work.cancelled == 0
    work.release.set()
    assert await second == ("result", True)
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_the_last_caller_to_leave_cancels_the_execution() -> None:
    flights: SingleFlight[str] = SingleFlight()
    work = Counting()
    callers = [asyncio.ensure_future(flights.run("k", work)) for _ in range(3)]
    await asyncio.sleep(0.01)
    for caller in callers:
        caller.cancel()
    await asyncio.gather(*callers, return_exceptions=True)
    await asyncio.sleep(0.01)
    assert work.cancelled == 1
    assert len(flights) == 0
    again = Counting()  # a later call starts afresh
    again.release.set()
    assert await flights.run("k", again) == ("result", False)


async def test_an_error_reaches_every_caller() -> None:
    flights: SingleFlight[str] = SingleFlight()
    gate = asyncio.Event()

    async def failing() -> str:
        await gate.wait()
        raise ValueError("backend said no")

    callers = [asyncio.ensure_future(flights.run("k", failing)) for _ in range(4)]
    await asyncio.sleep(0.01)
    gate.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(r, ValueError) for r in results)


@dataclass
class SlowTool:
    calls: int = 0
    error: Exception | None = None

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("slow", "a test tool", {"type": "object", "properties": {}})

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        self.calls += 1
        await asyncio.sleep(0.05)
        if self.error is not None:
            raise self.error
        return ToolOutput(content={"n": 1})


async def test_the_runner_shares_calls_across_requests_without_a_cache() -> None:
    tool = SlowTool()
    runner = ToolRunner({"slow": BoundTool(tool, timeout_s=5)}, cache=None)
    call = ToolCallRequest("c1", "slow", '{"a": 1}')
    rounds = await asyncio.gather(*(runner.run_round([call], Conversation()) for _ in range(64)))
    assert tool.calls == 1
    assert {r[0].status for r in rounds} == {"ok"}


async def test_a_misconfigured_tool_is_unavailable_to_the_model() -> None:
    tool = SlowTool(error=ToolMisconfigured("the database refused its credentials", tool="slow"))
    runner = ToolRunner({"slow": BoundTool(tool)}, cache=None)
    [record] = await runner.run_round([ToolCallRequest("c", "slow", "{}")], Conversation())
    assert record.status == "unavailable"
    assert "refused its credentials" in record.observation
