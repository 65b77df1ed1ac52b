"""Bodies that reached a 500 (issue 34): deep nesting, lone surrogates, content parts whose text
is no string. Each is refused at intake, in the route's error shape, before the model or a tool
is called. The agent over real HTTP, the scripted model server, in-process tool doubles."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_doubles import FakeTool, seed_sql, seed_vector
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

DEEP = b"[" * 100_000 + b"]" * 100_000  # 200 kB, 100,000 levels


@dataclass
class Agent:
    url: str
    model: ScriptedServer
    tools: list[FakeTool]

    def post(self, path: str, body: bytes | dict[str, Any]) -> httpx.Response:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"content-type": "application/json"}
        return httpx.post(f"{self.url}{path}", content=content, headers=headers, timeout=30)

    def untouched(self) -> None:
        """Neither the model server nor a tool saw anything."""
        assert self.model.requests() == []
        assert [t.calls for t in self.tools] == [[], []]


@pytest.fixture
def agent(scripted: ScriptedServer) -> Iterator[Agent]:
    scripted.set_scenario(Scenario(turns=[ScriptedResponse(content="an answer")] * 10))
    tools = [seed_sql(), seed_vector()]
    config = AgentConfig.model_validate(
        {"model": {"endpoint": scripted.url, "servedModelName": "scripted"}}
    )
    app = create_app(config, tools={t.name: BoundTool(t) for t in tools})
    with serve_app(app) as served:
        yield Agent(served.url, scripted, tools)


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "field"}
    assert error["type"] == "invalid_request_error"
    return error


def _a2a(text: str) -> dict[str, Any]:
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/query", b'{"question":"x","history":' + DEEP + b"}"),
        ("/v1/chat/completions", b'{"messages":[{"role":"user","content":' + DEEP + b"}]}"),
    ],
    ids=["query", "chat"],
)
def test_deep_nesting_is_a_400_before_parsing(agent: Agent, path: str, body: bytes) -> None:
    error = _error(agent.post(path, body), 400)
    assert error["message"].startswith("the body nests arrays and objects more than 64 levels")
    assert error["field"] is None
    agent.untouched()


def test_deep_nesting_on_a2a_is_a_json_rpc_parse_error(agent: Agent) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":' + DEEP + b"}"
    response = agent.post("/a2a", body)
    assert response.status_code == 400
    reply = response.json()
    assert reply["error"]["code"] == -32700
    assert "more than 64 levels" in reply["error"]["message"]
    agent.untouched()


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/query", b'{"question":"\\ud800 x"}', "question"),
        (
            "/v1/query",
            b'{"question":"x","history":[{"role":"user","content":"\\udc00"}]}',
            "history.0.content",
        ),
        (
            "/v1/chat/completions",
            b'{"messages":[{"role":"user","content":"\\ud800 x"}]}',
            "messages.0.content",
        ),
        (
            "/v1/chat/completions",
            b'{"messages":[{"role":"assistant","content":"a \\udbff"},'
            b'{"role":"user","content":"q"}]}',
            "messages.0.content",
        ),
        (
            "/v1/chat/completions",
            b'{"messages":[{"role":"user","content":[{"type":"text","text":"\\ud800 x"}]}]}',
            "messages.0.content.0.text",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_naming_the_field(
    agent: Agent, path: str, body: bytes, field: str
) -> None:
    error = _error(agent.post(path, body), 422)
    assert error["field"] == field
    assert error["message"].startswith(f"{field}: the text holds a lone UTF-16 surrogate")
    agent.untouched()


def test_a_lone_surrogate_on_a2a_is_refused_before_the_task(agent: Agent) -> None:
    body = json.dumps(_a2a("\ud800 x")).encode()  # json.dumps writes it as the escape
    response = agent.post("/a2a", body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["code"] == -32600
    assert error["data"]["field"] == "params.message.parts.0.text"
    agent.untouched()


@pytest.mark.parametrize(
    ("part", "complaint"),
    [
        ({"type": "text", "text": {"a": 1}}, "(an object, not a string)"),
        ({"type": "text", "text": ["a"]}, "(an array, not a string)"),
        ({"type": "text", "text": 7}, "(a number, not a string)"),
        ({"type": "text"}, "(missing)"),
    ],
)
def test_a_content_part_whose_text_is_no_string_is_refused(
    agent: Agent, part: dict[str, Any], complaint: str
) -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "q"}, part]}]
    error = _error(agent.post("/v1/chat/completions", {"messages": messages}), 422)
    assert error["field"] == "messages.0.content.1.text"
    assert error["message"].endswith(complaint)
    agent.untouched()


def test_valid_parts_and_pairs_still_answer(agent: Agent) -> None:
    parts = [
        {"type": "text", "text": "How many contracts? \N{GRINNING FACE}"},
        {"type": "image_url", "image_url": {"url": "data:,"}},  # no text: ignored, as before
    ]
    body = {"messages": [{"role": "user", "content": parts}]}
    response = agent.post("/v1/chat/completions", body)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "an answer"
    (request,) = agent.model.requests()
    assert request["messages"][-1]["content"] == "How many contracts? \N{GRINNING FACE}"
