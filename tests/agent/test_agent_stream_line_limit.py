"""A model server whose stream carries one line over the model client's bound
(``chatwire.MAX_STREAM_LINE``, 1 MiB; aiohttp's own readline would raise ``LineTooLong``): the
agent answers as for any other unreadable reply from its model server — a
``ModelResponseError`` naming the model server — never an HTTP 500, and nothing of the line
reaches the caller. The agent over real HTTP, the scripted model server sending the whole answer
as one server-sent event (``completion_tokens=1``)."""

from __future__ import annotations

import re

import httpx
import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.errors import ModelResponseError
from sleuth.core.llm import OpenAIChatModel
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_doubles import seed_sql, seed_vector
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

MARK = "LEAKMARK"
# aiohttp reads a line of up to 2 x its read buffer, growing; 4 MiB is over any of its limits.
LONG = MARK + "x" * (4 << 20)
ONE_LINE = ScriptedResponse(content=LONG, completion_tokens=1)
SHORT = ScriptedResponse(content="47 contracts.", completion_tokens=1)
# What the error says (the client's limit, or a line limit of the stream reader: either way a
# line over a limit, and not the line itself).
SAID = re.compile(r"stream line (is )?over")


async def test_the_model_client_says_the_model_server_sent_a_line_too_long(
    scripted: ScriptedServer,
) -> None:
    scripted.set_scenario(Scenario(turns=[ONE_LINE, SHORT], turn_selection="sequential"))
    model = OpenAIChatModel(scripted.url, "scripted")
    try:
        with pytest.raises(ModelResponseError) as info:
            await model.complete([{"role": "user", "content": "How many?"}], [])
        # The same client reads the next reply: the failed stream did not poison it.
        turn = await model.complete([{"role": "user", "content": "How many?"}], [])
    finally:
        await model.aclose()
    said = str(info.value)
    assert SAID.search(said), said
    assert MARK not in said
    assert info.value.retryable is False
    assert turn.content == "47 contracts."


@pytest.mark.parametrize("fallback", [False, True])
def test_the_agent_answers_without_a_500_and_leaks_nothing(
    scripted: ScriptedServer, fallback: bool
) -> None:
    scripted.set_scenario(Scenario(turns=[ONE_LINE], turn_selection="sequential"))
    config = AgentConfig.model_validate(
        {
            "model": {"endpoint": scripted.url, "servedModelName": "scripted"},
            "planner": {"mode": "llm", "fallbackToRouter": fallback},
            # no online scoring: its judge calls would take the scripted turns
            "onlineEval": {"sampleRate": 0},
        }
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    question = {"question": "How many contracts in 2025?"}
    chat = {"model": "agent", "messages": [{"role": "user", "content": question["question"]}]}
    with serve_app(create_app(config, tools=tools)) as served, httpx.Client(timeout=60) as client:
        for path, body in (("/v1/query", question), ("/v1/chat/completions", chat)):
            scripted.set_scenario(Scenario(turns=[ONE_LINE], turn_selection="sequential"))
            response = client.post(served.url + path, json=body)
            assert MARK not in response.text, f"{path}: the model server's bytes reached the caller"
            assert response.status_code == 200, f"{path}: {response.text[:2000]}"
            reply = response.json()
            if path == "/v1/query":
                answer, trace = reply["answer"], reply["trace"]
            else:
                answer = reply["choices"][0]["message"]["content"]
                trace = reply["sleuth"]["trace"]
            assert "model server" in answer.lower(), answer
            assert SAID.search(answer), answer
            assert SAID.search(trace["steps"][0]["error"]), trace
            if fallback:  # the router answers, saying why
                assert trace["degraded"] is True
                assert "deterministic router" in answer
            else:
                assert trace["stopReason"] == "model_error"
