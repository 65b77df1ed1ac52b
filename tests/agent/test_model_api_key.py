"""The agent sends its model server's API key (``VLLM_API_KEY`` on the server side) as a bearer
token: the scripted server stands in for vLLM started with ``--api-key`` and refuses without it."""

from __future__ import annotations

import httpx
import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_doubles import seed_sql, seed_vector
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

KEY = "k-" + "7" * 30
ENV = "SLEUTH_MODEL_API_KEY"


def _ask(server: ScriptedServer) -> httpx.Response:
    config = AgentConfig.model_validate(
        {"model": {"endpoint": server.url, "servedModelName": "scripted", "apiKeyEnv": ENV}}
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    with serve_app(create_app(config, tools=tools, name="keyed")) as app:
        return httpx.post(f"{app.url}/v1/query", json={"question": "ping"}, timeout=30)


def test_the_agent_sends_the_model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = Scenario(turns=[ScriptedResponse(content="pong")])
    with ScriptedServer(scenario, api_key=KEY) as server:
        monkeypatch.setenv(ENV, KEY)
        response = _ask(server)
        assert response.status_code == 200, response.text
        assert response.json()["answer"] == "pong"
        assert server.state.unauthorized == 0

        # Without the key the server refuses the agent's call: the answer is not the model's.
        monkeypatch.delenv(ENV)
        response = _ask(server)
        assert server.state.unauthorized >= 1
        assert response.status_code != 200 or response.json().get("answer") != "pong"
        assert KEY not in response.text


def test_the_scripted_server_checks_the_key_like_vllm() -> None:
    with ScriptedServer(Scenario(turns=[ScriptedResponse(content="hi")]), api_key=KEY) as server:
        body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
        url = f"{server.url}/chat/completions"
        assert httpx.post(url, json=body, timeout=10).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.post(url, json=body, headers=wrong, timeout=10).status_code == 401
        right = {"Authorization": f"Bearer {KEY}"}
        assert httpx.post(url, json=body, headers=right, timeout=10).status_code == 200
        assert httpx.get(f"{server.url}/models", timeout=10).status_code == 401
        root = server.url.removesuffix("/v1")
        assert httpx.get(f"{root}/health", timeout=10).status_code == 200  # probes stay open
        assert server.state.unauthorized == 3
