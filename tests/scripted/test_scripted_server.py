"""The scripted model server speaks the OpenAI wire format to a real OpenAI client over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from sleuth.scripted import (
    LatencyProfile,
    Match,
    Rule,
    Scenario,
    ScriptedProcess,
    ScriptedResponse,
    ScriptedServer,
    ScriptedToolCall,
    load_scenario,
    seed_latency_profile,
)

pytestmark = pytest.mark.integration

SCENARIO = Scenario(
    model="scripted-test",
    turns=[
        ScriptedResponse(
            tool_calls=[
                ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"}),
                ScriptedToolCall(name="vector_search", arguments='{"query": '),
            ]
        ),
        ScriptedResponse(content="In 2025 you signed 47 contracts."),
        ScriptedResponse(status=503, error_message="scripted overload"),
    ],
    rules=[
        Rule(
            match=Match(system_contains="You are a judge", json_mode=True),
            response=ScriptedResponse(content='{"verdict": 1}'),
        )
    ],
)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer(SCENARIO) as srv:
        yield srv


@pytest.fixture
def client(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0)


def _history(assistant_turns: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "user", "content": "How many contracts?"}]
    for _ in range(assistant_turns):
        messages.append({"role": "assistant", "content": "thinking"})
        messages.append({"role": "user", "content": "go on"})
    return messages


def test_parallel_tool_calls_non_streaming(client: openai.OpenAI) -> None:
    result = client.chat.completions.create(model="m", messages=_history(0))  # type: ignore[arg-type]
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [c.function.name for c in calls] == ["sql_query", "vector_search"]  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"query": "SELECT 1"}  # type: ignore[union-attr]
    assert calls[1].function.arguments == '{"query": '  # type: ignore[union-attr]
    assert calls[0].id != calls[1].id
    assert result.usage is not None
    assert result.usage.prompt_tokens > 0


def test_streaming_reassembles_tool_calls_and_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="m",
        messages=_history(0),  # type: ignore[arg-type]
        stream=True,
        stream_options={"include_usage": True},
    )
    names: dict[int, str] = {}
    args: dict[int, str] = {}
    usage = None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                if call.function and call.function.name:
                    names[call.index] = call.function.name
                if call.function and call.function.arguments:
                    args[call.index] = args.get(call.index, "") + call.function.arguments
    assert names == {0: "sql_query", 1: "vector_search"}
    assert json.loads(args[0]) == {"query": "SELECT 1"}
    assert args[1] == '{"query": '
    assert usage is not None
    assert usage.completion_tokens > 0


def test_turn_is_chosen_by_position_and_streams_text(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="m", messages=_history(1), stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "In 2025 you signed 47 contracts."


def test_failing_turn_is_an_http_error(client: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError, match="scripted overload"):
        client.chat.completions.create(model="m", messages=_history(2))  # type: ignore[arg-type]


def test_rule_matches_system_prompt_in_json_mode(client: openai.OpenAI) -> None:
    messages = [
        {"role": "system", "content": "You are a judge. Answer JSON."},
        {"role": "user", "content": "Is it faithful?"},
    ]
    result = client.chat.completions.create(
        model="m",
        messages=messages,  # type: ignore[arg-type]
        response_format={"type": "json_object"},
    )
    assert json.loads(result.choices[0].message.content or "") == {"verdict": 1}
    plain = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert plain.choices[0].message.tool_calls  # without JSON mode the rule does not apply


def test_models_and_embeddings(client: openai.OpenAI, server: ScriptedServer) -> None:
    assert [m.id for m in client.models.list()] == ["scripted-test"]
    first = client.embeddings.create(model="e", input=["alpha", "beta"])
    again = client.embeddings.create(model="e", input="alpha")
    assert len(first.data[0].embedding) == 16
    assert first.data[0].embedding == again.data[0].embedding
    assert first.data[0].embedding != first.data[1].embedding
    bad = httpx.post(f"{server.url}/embeddings", json={"input": 3})
    assert bad.status_code == 400
    assert bad.json()["error"]["param"] == "input"


def test_missing_messages_is_a_400_naming_the_field(server: ScriptedServer) -> None:
    response = httpx.post(f"{server.url}/chat/completions", json={"model": "m"})
    assert response.status_code == 400
    assert "messages" in response.json()["error"]["message"]


def test_process_runner_serves_and_logs_requests() -> None:
    scenario = Scenario(turn_selection="sequential", turns=[ScriptedResponse(content="one")])
    with ScriptedProcess(scenario) as proc:
        client = openai.OpenAI(base_url=proc.url, api_key="unused", max_retries=0)
        first = client.chat.completions.create(model="m", messages=_history(3))  # type: ignore[arg-type]
        second = client.chat.completions.create(model="m", messages=_history(0))  # type: ignore[arg-type]
        assert first.choices[0].message.content == "one"
        assert "no turn left" in (second.choices[0].message.content or "")
        assert len(proc.requests()) == 2
        proc.set_scenario(Scenario(turns=[ScriptedResponse(content="replaced")]))
        third = client.chat.completions.create(model="m", messages=_history(0))  # type: ignore[arg-type]
        assert third.choices[0].message.content == "replaced"


@pytest.mark.unit
def test_latency_profile_interpolates_the_seed_figures() -> None:
    profile = seed_latency_profile(per_token_ms=5)
    assert profile.ttft_ms(1000) == 150
    assert profile.ttft_ms(6000) == pytest.approx(185)
    assert profile.ttft_ms(8000) == pytest.approx(220)
    assert profile.total_ms(1000, 61) == pytest.approx(450)
    assert LatencyProfile().total_ms(9000, 100) == 0


@pytest.mark.unit
def test_yaml_scenario_file_in_camel_case(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "turnSelection: sequential\n"
        "turns:\n  - toolCalls: [{name: sql_query, arguments: {query: SELECT 1}}]\n"
        "rules:\n  - match: {lastMessageContains: ping}\n    response: {content: pong}\n"
        "latency: {ttftPoints: [[0, 150], [4000, 150], [8000, 220]], perTokenMs: 5}\n"
    )
    scenario = load_scenario(path)
    assert scenario.turns[0].tool_calls[0].arguments == {"query": "SELECT 1"}
    assert scenario.rules[0].match.last_message_contains == "ping"
    assert scenario.latency.ttft_ms(8000) == pytest.approx(220)


def _guided_body(schema: dict[str, object]) -> dict[str, object]:
    return {
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
        "response_format": {"type": "json_object", "schema": schema},
    }


def test_a_schema_that_is_not_json_schema_is_refused() -> None:
    body = _guided_body({"type": "objekt"})
    with ScriptedServer(Scenario(turns=[ScriptedResponse(content="{}")])) as server:
        r = httpx.post(f"{server.url}/chat/completions", json=body, timeout=10)
    assert r.status_code == 400
    assert "not a valid JSON Schema" in r.json()["error"]["message"]
    assert r.json()["error"]["param"] == "response_format"


def test_a_guided_request_gets_its_turn_in_guided_form_checked_against_the_schema() -> None:
    from sleuth.core.guided import reply_schema

    tools = [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in ("sql_query", "vector_search")
    ]
    call = ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"})
    response = ScriptedResponse(tool_calls=[call], thought="A count: SQL.")
    rule = Rule(match=Match(tool_offered="vector_search"), response=response)
    with ScriptedServer(Scenario(rules=[rule])) as server:
        url = f"{server.url}/chat/completions"
        r = httpx.post(url, json=_guided_body(reply_schema(tools)), timeout=10)
        # A schema without that tool: no constrained server could write the call, so 400 says why.
        refused = httpx.post(url, json=_guided_body(reply_schema(tools[1:])), timeout=10)
    assert r.status_code == 200, r.text
    message = r.json()["choices"][0]["message"]
    assert "tool_calls" not in message  # a constrained server writes text
    assert json.loads(message["content"]) == {  # the thought first, then the calls
        "thought": "A count: SQL.",
        "needs_tool": True,
        "calls_now": 1,
        "tool_calls": [{"name": "sql_query", "arguments": {"query": "SELECT 1"}}],
    }
    assert refused.status_code == 400
    assert "refuses the scripted reply" in refused.json()["error"]["message"]


def test_a_raw_turn_goes_out_verbatim_to_a_guided_request() -> None:
    from sleuth.core.guided import reply_schema

    raw = ScriptedResponse(content='{"answer": "cu', raw=True)
    with ScriptedServer(Scenario(turns=[raw])) as server:
        body = _guided_body(reply_schema([]))
        r = httpx.post(f"{server.url}/chat/completions", json=body, timeout=10)
    assert r.status_code == 200
    assert r.json()["choices"][0]["message"]["content"] == '{"answer": "cu'


def test_a_cut_stream_ends_without_finish_reason_or_done() -> None:
    cut = ScriptedResponse(
        content="In 2025 you signed 47 contracts.", completion_tokens=8, cut_after=3
    )
    with ScriptedServer(Scenario(turns=[cut])) as server:
        body = {"model": "m", "messages": _history(0), "stream": True}
        r = httpx.post(f"{server.url}/chat/completions", json=body, timeout=10)
    assert r.status_code == 200
    data = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
    assert "[DONE]" not in data
    chunks = [json.loads(d) for d in data]
    assert len(chunks) == 4  # the role chunk and three deltas
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text
    assert "In 2025 you signed 47 contracts.".startswith(text)
    assert text != "In 2025 you signed 47 contracts."
