"""Fuzzing the agent's public routes (issue 34): arbitrary bytes, arbitrary JSON and valid
requests with a part replaced by arbitrary JSON, sent to every route over real HTTP. No answer
is a 5xx, and every error has the documented shape (REST routes: ``{"error": {"message",
"type", "field"}}``; ``/a2a``: a JSON-RPC error). Bounded: about 15 s on a loaded 2-core host.

The agent runs with the scripted model server (which answers every request) and in-process tool
doubles, so a fuzzed body that happens to be a valid request runs the whole loop too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_doubles import seed_sql, seed_vector
from tests.support.asgi import serve_app
from tests.support.fuzz import CONTENT_TYPES, TEXT, bodies, check_response

pytestmark = pytest.mark.integration

FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

_HISTORY = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
_PARTS = [{"type": "text", "text": "How many contracts?"}]
_MESSAGE = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "How many contracts?"}]}
TEMPLATES: dict[str, list[Any]] = {
    "/v1/query": [{"question": "How many contracts?", "history": _HISTORY}],
    "/v1/chat/completions": [
        {"model": "agent", "messages": [{"role": "system", "content": "x"}, *_HISTORY,
                                        {"role": "user", "content": _PARTS}]},
        {"messages": [{"role": "user", "content": "q"}], "stream": True,
         "stream_options": {"include_usage": True}},
    ],
    "/a2a": [
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": _MESSAGE}},
        {"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage",
         "params": {"message": _MESSAGE}},
        {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "no-such-task"}},
        {"jsonrpc": "2.0", "id": 3, "method": "CancelTask", "params": {"id": "no-such-task"}},
    ],
}  # fmt: skip
GETS = ["/healthz", "/readyz", "/metrics", "/v1/models", "/.well-known/agent-card.json"]


@pytest.fixture(scope="module")
def agent() -> Iterator[httpx.Client]:
    scenario = Scenario(fallback=ScriptedResponse(content="an answer"))
    with ScriptedServer(scenario) as model:
        config = AgentConfig.model_validate(
            {"model": {"endpoint": model.url, "servedModelName": "scripted"}}
        )
        tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
        with (
            serve_app(create_app(config, tools=tools)) as served,
            httpx.Client(base_url=served.url, timeout=30) as client,
        ):
            yield client


@FUZZ
@given(data=st.data(), route=st.sampled_from(sorted(TEMPLATES)), content_type=CONTENT_TYPES)
def test_any_body_on_any_post_route(
    agent: httpx.Client, data: st.DataObject, route: str, content_type: str
) -> None:
    body = data.draw(bodies(TEMPLATES[route]), label="body")
    headers = {"content-type": content_type} if content_type else {}
    response = agent.post(route, content=body, headers=headers)
    check_response(response, jsonrpc=route == "/a2a")


@settings(max_examples=60, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH"]),
    path=st.sampled_from(GETS + sorted(TEMPLATES)) | TEXT.map(lambda t: "/" + t),
    body=st.binary(max_size=32),
)
def test_any_method_on_any_path(agent: httpx.Client, method: str, path: str, body: bytes) -> None:
    url = quote(path.encode("utf-8", "surrogatepass"), safe="/")  # any bytes, percent-encoded
    response = agent.request(method, url, content=body if method != "GET" else None)
    check_response(response, jsonrpc=path == "/a2a")
