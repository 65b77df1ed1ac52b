"""The loop against the scripted model over real HTTP, with in-process tool doubles."""

from __future__ import annotations

import json

import pytest

from sleuth.agent.prompts import SYNTHESIZE_PROMPT
from sleuth.agent.trace import Trace
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer, ScriptedToolCall
from sleuth.tools.base import ToolArgumentError, ToolUnavailable
from tests.agent.agent_doubles import (
    SEED_ANSWER,
    SEED_QUESTION,
    SEED_SEARCH,
    SEED_SQL,
    FakeTool,
    make_agent,
    seed_sql,
    seed_vector,
)

pytestmark = pytest.mark.integration


def _call(name: str, args: dict[str, object] | str) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, arguments=args)


def _tools_turn(*calls: ScriptedToolCall) -> ScriptedResponse:
    return ScriptedResponse(tool_calls=list(calls))


SEED_SCENARIO = Scenario(
    turns=[
        _tools_turn(_call("sql_query", SEED_SQL)),
        _tools_turn(_call("vector_search", SEED_SEARCH)),
        ScriptedResponse(content=SEED_ANSWER),
    ]
)


@pytest.mark.parametrize("stream", [True, False])
async def test_seed_two_iteration_trace(scripted: ScriptedServer, stream: bool) -> None:
    scripted.set_scenario(SEED_SCENARIO)
    sql, vector = seed_sql(), seed_vector()
    result = await make_agent(scripted.url, [sql, vector], stream=stream).run(SEED_QUESTION)

    assert result.answer == SEED_ANSWER
    trace = result.trace
    assert trace.stop_reason == "answered"
    assert trace.iterations == 2
    assert [s.kind for s in trace.steps] == ["model", "tools", "model", "tools", "model"]
    assert [c.tool for c in trace.tool_calls()] == ["sql_query", "vector_search"]
    assert sql.calls == [SEED_SQL]
    assert json.loads(trace.tool_calls()[0].observation) == {
        "num_contratos": 47,
        "total_eur": 8300000,
    }
    assert [c["id"] for c in result.citations] == ["chunk_1", "chunk_2", "chunk_3"]
    assert trace.prompt_tokens > 0
    # The evals read the trace back from JSON.
    assert Trace.model_validate(trace.model_dump(mode="json", by_alias=True)) == trace
    assert trace.contexts()[0] == '{"num_contratos": 47, "total_eur": 8300000}'
    if stream:
        assert all(m.ttft_ms is not None for m in trace.model_steps())
    # What the model was sent: tools offered with tool_choice auto, observations as tool messages.
    requests = scripted.requests()
    assert len(requests) == 3
    assert requests[0]["tool_choice"] == "auto"
    assert {t["function"]["name"] for t in requests[0]["tools"]} == {"sql_query", "vector_search"}
    last = requests[2]["messages"]
    assert last[-1]["role"] == "tool"
    assert "clause 8.3" in last[-1]["content"]
    assert last[-2]["tool_calls"][0]["function"]["name"] == "vector_search"
    assert trace.tool_calling == "native"


@pytest.mark.parametrize("stream", [True, False])
async def test_guided_tool_calling_gives_the_same_trace(
    scripted: ScriptedServer, stream: bool
) -> None:
    """The reply is forced into a schema and parsed into the turn the native path produces."""
    scripted.set_scenario(SEED_SCENARIO)
    sql, vector = seed_sql(), seed_vector()
    agent = make_agent(scripted.url, [sql, vector], stream=stream, tool_calling="guided")
    result = await agent.run(SEED_QUESTION)

    assert result.answer == SEED_ANSWER
    trace = result.trace
    assert trace.tool_calling == "guided"
    assert trace.stop_reason == "answered"
    assert [s.kind for s in trace.steps] == ["model", "tools", "model", "tools", "model"]
    assert [(c.id, c.tool, c.status) for c in trace.tool_calls()] == [
        ("call_0_0", "sql_query", "ok"),
        ("call_1_0", "vector_search", "ok"),
    ]
    assert sql.calls == [SEED_SQL]
    assert [c["id"] for c in result.citations] == ["chunk_1", "chunk_2", "chunk_3"]
    assert Trace.model_validate(trace.model_dump(mode="json", by_alias=True)) == trace
    requests = scripted.requests()
    assert all("response_format" in r and r["tool_choice"] == "none" for r in requests)
    # The conversation keeps its native shape: tool_calls with the guided ids, tool messages.
    last = requests[2]["messages"]
    assert last[-2]["tool_calls"][0]["id"] == "call_1_0"
    assert last[-1] == {"role": "tool", "tool_call_id": "call_1_0", "content": last[-1]["content"]}


THOUGHT_SCENARIO = Scenario(
    turns=[
        ScriptedResponse(
            tool_calls=[_call("sql_query", SEED_SQL), _call("vector_search", SEED_SEARCH)],
            thought="A count and recurring clauses: two independent parts.",
        ),
        ScriptedResponse(content=SEED_ANSWER, thought="The results answer both parts."),
    ]
)


async def test_guided_thoughts_go_to_the_trace_and_the_conversation_never_the_answer(
    scripted: ScriptedServer,
) -> None:
    scripted.set_scenario(THOUGHT_SCENARIO)
    sql, vector = seed_sql(), seed_vector()
    agent = make_agent(scripted.url, [sql, vector], tool_calling="guided")
    result = await agent.run(SEED_QUESTION)

    assert result.answer == SEED_ANSWER  # the answer field alone
    trace = result.trace
    assert [s.thought for s in trace.model_steps()] == [
        "A count and recurring clauses: two independent parts.",
        "The results answer both parts.",
    ]
    assert [s.content for s in trace.model_steps()] == [None, SEED_ANSWER]
    assert trace.iterations == 1
    assert trace.steps[1].parallel  # type: ignore[union-attr]
    assert Trace.model_validate(trace.model_dump(mode="json", by_alias=True)) == trace
    first, second = scripted.requests()
    for request in (first, second):  # told the reply's fields, after the system prompt
        roles = [m["role"] for m in request["messages"][:3]]
        assert roles == ["system", "system", "user"]
        assert '"needs_tool"' in request["messages"][1]["content"]
    # the next turn sees the plan it made: the thought is the text of its calls' message
    calls_message = second["messages"][3]
    assert calls_message["content"] == "A count and recurring clauses: two independent parts."
    assert [c["id"] for c in calls_message["tool_calls"]] == ["call_0_0", "call_0_1"]


async def test_a_guided_call_the_schema_forbids_ends_the_run_naming_the_schema(
    scripted: ScriptedServer,
) -> None:
    """The scripted server checks the schema it was sent: a wrong one is seen, not hidden."""
    scripted.set_scenario(Scenario(turns=[_tools_turn(_call("sql_query", {"sql": "SELECT 1"}))]))
    agent = make_agent(scripted.url, [seed_sql()], tool_calling="guided")
    result = await agent.run(SEED_QUESTION)
    assert result.trace.stop_reason == "model_error"
    (step,) = result.trace.model_steps()
    assert step.error is not None
    assert "schema refuses the scripted reply" in step.error


async def test_parallel_calls_overlap_in_the_trace(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", SEED_SQL), _call("vector_search", SEED_SEARCH)),
                ScriptedResponse(content="both"),
            ]
        )
    )
    sql, vector = seed_sql(), seed_vector()
    sql.delay_s, vector.delay_s = 0.3, 0.2
    result = await make_agent(scripted.url, [sql, vector]).run(SEED_QUESTION)
    step = result.trace.steps[1]
    assert step.kind == "tools"
    assert step.parallel is True
    first, second = step.calls
    # Each call started before the other ended: they ran at the same time.
    assert first.start_ms < second.end_ms
    assert second.start_ms < first.end_ms
    # The round lasted less than the sum of the two calls.
    assert step.end_ms - step.start_ms < first.duration_ms + second.duration_ms


async def test_parallel_switch_off_runs_calls_one_after_another(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", SEED_SQL), _call("vector_search", SEED_SEARCH)),
                ScriptedResponse(content="both"),
            ]
        )
    )
    sql, vector = seed_sql(), seed_vector()
    sql.delay_s = vector.delay_s = 0.05
    result = await make_agent(scripted.url, [sql, vector], parallel=False).run(SEED_QUESTION)
    first, second = result.trace.tool_calls()
    assert result.trace.steps[1].parallel is False
    assert second.start_ms >= first.end_ms


async def test_iteration_limit_answers_honestly_with_what_was_found(
    scripted: ScriptedServer,
) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[_tools_turn(_call("sql_query", {"query": f"SELECT {i}"})) for i in range(5)]
        )
    )
    result = await make_agent(scripted.url, [seed_sql()], max_iterations=2).run("q")
    assert result.trace.stop_reason == "iteration_limit"
    assert result.trace.iterations == 2
    assert len(scripted.requests()) == 3
    assert "could not gather enough evidence" in result.answer
    assert "within 2 tool iteration(s)" in result.answer
    assert '"num_contratos": 47' in result.answer
    assert [c.status for c in result.trace.tool_calls()] == ["ok", "ok"]
    assert not result.trace.forced_answer


async def test_a_repeated_call_is_not_run_again_the_model_is_asked_to_answer(
    scripted: ScriptedServer,
) -> None:
    """A small model re-asks for the call it already has (seen with Qwen2.5-Coder on 2 cores):
    the loop does not spend the iterations; it asks once for an answer, with no tools offered."""
    again = _tools_turn(_call("sql_query", {"params": [100000, 2025, "EU"], "query": "SELECT 1"}))
    scripted.set_scenario(
        Scenario(turns=[again, again, ScriptedResponse(content="47 contracts (sql_query).")])
    )
    sql = seed_sql()
    result = await make_agent(scripted.url, [sql], max_iterations=5).run("q")
    assert result.trace.stop_reason == "answered"
    assert result.trace.forced_answer
    assert result.answer == "47 contracts (sql_query)."
    assert result.trace.iterations == 1
    assert len(sql.calls) == 1
    last = scripted.requests()[-1]
    assert "tools" not in last
    assert "tool_choice" not in last
    assert last["messages"][-1] == {"role": "user", "content": SYNTHESIZE_PROMPT}
    # The repeated call is answered, in the conversation, with the result it had the first time.
    first, second = (m for m in last["messages"] if m["role"] == "tool")
    assert first["content"] == second["content"]
    assert '"num_contratos": 47' in second["content"]
    # The repeated request is in the trace as asked, not as run.
    assert [s.tool_calls[0].name for s in result.trace.model_steps() if s.tool_calls] == [
        "sql_query",
        "sql_query",
    ]


async def test_a_call_with_new_arguments_still_runs(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", {"query": "SELECT 1"})),
                _tools_turn(
                    _call("sql_query", {"query": "SELECT 1"}),
                    _call("sql_query", {"query": "SELECT 2"}),
                ),
                ScriptedResponse(content="done"),
            ]
        )
    )
    result = await make_agent(scripted.url, [seed_sql()], max_iterations=5).run("q")
    assert not result.trace.forced_answer
    assert result.trace.iterations == 2
    assert result.answer == "done"


async def test_tool_timeout_becomes_an_observation(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("web_search", {"query": "copper price"})),
                ScriptedResponse(content="Real-time data is not accessible at this moment."),
            ]
        )
    )
    slow = FakeTool("web_search", {"price": 1}, delay_s=5)
    result = await make_agent(scripted.url, [slow], timeout_s=0.2).run("copper price today?")
    record = result.trace.tool_calls()[0]
    assert record.status == "timeout"
    assert json.loads(record.observation) == {"error": "timeout after 0.2s", "tool": "web_search"}
    sent = scripted.requests()[1]["messages"][-1]
    assert sent == {"role": "tool", "tool_call_id": record.id, "content": record.observation}
    assert result.answer == "Real-time data is not accessible at this moment."


async def test_tool_error_and_one_retry_rule(scripted: ScriptedServer) -> None:
    same = _call("vector_search", {"query": "clauses"})
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(same),
                _tools_turn(same),
                _tools_turn(same),
                ScriptedResponse(content="done"),
            ]
        )
    )
    down = FakeTool(
        "vector_search",
        ["chunk"],
        fail_with=[ToolUnavailable("qdrant is down"), ToolUnavailable("qdrant is down")],
    )
    result = await make_agent(scripted.url, [down]).run("clauses?")
    statuses = [(c.status, c.attempt) for c in result.trace.tool_calls()]
    assert statuses == [("unavailable", 1), ("unavailable", 2), ("retry_refused", 3)]
    assert len(down.calls) == 2  # the third request never reached the tool
    assert json.loads(result.trace.tool_calls()[0].observation) == {
        "error": "qdrant is down",
        "tool": "vector_search",
    }
    assert "retried once" in result.trace.tool_calls()[2].observation
    assert result.answer == "done"


async def test_permanent_tool_error_and_unknown_tool(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(
                    _call("sql_query", {"query": "DROP TABLE contracts"}),
                    _call("shell", {"cmd": "ls"}),
                ),
                ScriptedResponse(content="cannot"),
            ]
        )
    )
    sql = FakeTool("sql_query", {}, fail_with=[ToolArgumentError("query: only SELECT is allowed")])
    result = await make_agent(scripted.url, [sql]).run("drop it")
    bad, unknown = result.trace.tool_calls()
    assert bad.status == "error"
    assert "only SELECT" in bad.observation
    assert unknown.status == "unknown_tool"
    assert "offered tools: sql_query" in unknown.observation


async def test_malformed_arguments_are_counted_and_the_model_fixes_them(
    scripted: ScriptedServer,
) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", '{"query": "SELECT COUNT(*)')),
                _tools_turn(_call("sql_query", {"query": "SELECT COUNT(*) FROM contracts"})),
                ScriptedResponse(content="47"),
            ]
        )
    )
    sql = seed_sql()
    result = await make_agent(scripted.url, [sql]).run("how many?")
    first, second = result.trace.tool_calls()
    assert first.status == "malformed"
    assert "not a valid JSON object" in first.observation
    assert second.status == "ok"
    assert result.trace.malformed_tool_calls == 1
    assert sql.calls == [{"query": "SELECT COUNT(*) FROM contracts"}]
    assert result.answer == "47"


async def test_model_failure_ends_with_an_honest_answer(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", SEED_SQL)),
                ScriptedResponse(status=503, error_message="no capacity"),
            ]
        )
    )
    result = await make_agent(scripted.url, [seed_sql()]).run(SEED_QUESTION)
    assert result.trace.stop_reason == "model_error"
    assert "model server is unavailable" in result.answer
    assert "no capacity" in result.answer
    assert '"num_contratos": 47' in result.answer


async def test_unreachable_model_server() -> None:
    result = await make_agent("http://127.0.0.1:9/v1", [seed_sql()]).run("q")
    assert result.trace.stop_reason == "model_error"
    assert "unreachable" in result.answer


async def test_model_call_timeout(scripted: ScriptedServer) -> None:
    scripted.set_scenario(Scenario(turns=[ScriptedResponse(content="late", delay_ms=3000)]))
    result = await make_agent(scripted.url, [seed_sql()], model_timeout_s=0.3).run("q")
    assert result.trace.stop_reason == "model_error"
    assert "timed out" in (result.trace.model_steps()[0].error or "")


async def test_whole_request_timeout_keeps_the_evidence(scripted: ScriptedServer) -> None:
    scripted.set_scenario(
        Scenario(
            turns=[
                _tools_turn(_call("sql_query", SEED_SQL)),
                ScriptedResponse(content="late", delay_ms=3000),
            ]
        )
    )
    agent = make_agent(scripted.url, [seed_sql()], request_timeout_s=1.0)
    result = await agent.run(SEED_QUESTION)
    assert result.trace.stop_reason == "timeout"
    assert "ran out of time (1s)" in result.answer
    assert '"num_contratos": 47' in result.answer
