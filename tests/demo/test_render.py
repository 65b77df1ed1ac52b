"""The ReAct transcript `sleuth ask` prints: a guided reply's thought before its actions and
before the answer, never inside the answer."""

from __future__ import annotations

import pytest

from sleuth.demo.render import render_trace
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    SEED_SEARCH,
    SEED_SQL,
    make_agent,
    seed_sql,
    seed_vector,
)

pytestmark = pytest.mark.integration

PLAN = "A count and recurring clauses: two independent parts."
DONE = "The results answer both parts."


async def test_the_transcript_shows_each_thought_before_what_it_decided(
    scripted: ScriptedServer,
) -> None:
    calls = [
        ScriptedToolCall(name="sql_query", arguments=SEED_SQL),
        ScriptedToolCall(name="vector_search", arguments=SEED_SEARCH),
    ]
    scripted.set_scenario(
        Scenario(
            turns=[
                ScriptedResponse(tool_calls=calls, thought=PLAN),
                ScriptedResponse(content=SEED_ANSWER, thought=DONE),
            ]
        )
    )
    agent = make_agent(scripted.url, [seed_sql(), seed_vector()], tool_calling="guided")
    try:
        result = await agent.run(SEED_QUESTION)
    finally:
        await agent.model.aclose()  # type: ignore[attr-defined]
    text = render_trace(result.trace, result.answer, result.citations)

    lines = [line.strip() for line in text.splitlines()]
    plan = lines.index(f"Thought: {PLAN}")
    first_action = next(i for i, line in enumerate(lines) if line.startswith("Action: "))
    assert plan < first_action
    assert lines[first_action].startswith("Action: sql_query")
    done = lines.index(f"Thought: {DONE}")
    answer = next(i for i, line in enumerate(lines) if line.startswith("Answer ("))
    assert first_action < done < answer
    assert DONE not in result.answer
    assert PLAN not in result.answer
    assert SEED_ANSWER.startswith(lines[answer + 1])  # the answer follows, without a thought
