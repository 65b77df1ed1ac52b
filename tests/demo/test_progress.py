"""The progress a slow model shows: a line per turn, a ticker while it works, its decision."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sleuth.core.errors import ModelTimeout
from sleuth.core.llm import ModelTurn, ToolCallRequest
from sleuth.demo.progress import ProgressModel

pytestmark = pytest.mark.unit


class SlowModel:
    name = "slow"
    tool_calling = "guided"

    def __init__(self, turns: list[ModelTurn | Exception]) -> None:
        self.turns = turns

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        await asyncio.sleep(0.05)
        turn = self.turns.pop(0)
        if isinstance(turn, Exception):
            raise turn
        return turn


async def test_each_turn_says_what_the_model_decided_and_ticks_meanwhile() -> None:
    lines: list[str] = []
    call = ToolCallRequest("call_0_0", "sql_query", "{}")
    inner = SlowModel([ModelTurn(None, (call,)), ModelTurn("47."), ModelTimeout("slow")])
    model = ProgressModel(inner, interval_s=0.01, write=lines.append)  # type: ignore[arg-type]
    assert (model.name, model.tool_calling) == ("slow", "guided")
    first = await model.complete([{"role": "user", "content": "q"}], [])
    assert first.tool_calls == (call,)
    history = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "content": "{}"},
    ]
    assert (await model.complete(history, [])).content == "47."
    with pytest.raises(ModelTimeout):
        await model.complete(history, [])
    text = "\n".join(lines)
    assert "model turn 1: asking slow" in text
    assert "model turn 1: still working" in text
    assert "model turn 1: calls sql_query" in text
    assert "model turn 2: asking slow (after 1 tool result)" in text
    assert "model turn 2: answered" in text
    assert "model turn 2: failed after" in text
