"""A model stream cut after its text was relayed (issue 34): the streamed answer must not end as
if it were complete. The agent over real HTTP, the scripted model server cutting its stream
(``cut_after``), the official OpenAI SDK as the client."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from sleuth.agent.api import create_app
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.scripted import Scenario, ScriptedResponse, ScriptedServer
from tests.agent.agent_doubles import seed_sql, seed_vector
from tests.support.asgi import serve_app

pytestmark = pytest.mark.integration

ANSWER = "In 2025 you signed 47 contracts with EU providers above 100,000 euros."
CUT = ScriptedResponse(content=ANSWER, completion_tokens=12, cut_after=4)
WHOLE = ScriptedResponse(content=ANSWER, completion_tokens=12)


def _serve(model: ScriptedServer, **planner: Any) -> serve_app:
    config = AgentConfig.model_validate(
        {"model": {"endpoint": model.url, "servedModelName": "scripted"}, "planner": planner}
    )
    tools = {t.name: BoundTool(t) for t in (seed_sql(), seed_vector())}
    return serve_app(create_app(config, tools=tools))


@pytest.fixture
def ask(scripted: ScriptedServer) -> Any:
    def run(turns: list[ScriptedResponse], **planner: Any) -> tuple[str, str | None, Any]:
        scripted.set_scenario(Scenario(turns=turns, turn_selection="sequential"))
        with _serve(scripted, **planner) as served:
            client = openai.OpenAI(base_url=f"{served.url}/v1", api_key="x", max_retries=0)
            stream = client.chat.completions.create(
                model="agent",
                messages=[{"role": "user", "content": "How many contracts in 2025?"}],
                stream=True,
            )
            chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        last = [c for c in chunks if c.choices][-1]
        return text, last.choices[0].finish_reason, (last.model_extra or {}).get("sleuth", {})

    return run


def test_a_complete_answer_ends_with_stop(ask: Any) -> None:
    text, finish, extra = ask([WHOLE])
    assert text == ANSWER
    assert finish == "stop"
    assert "textCut" not in extra


def test_a_cut_retried_to_completion_ends_with_stop(ask: Any) -> None:
    text, finish, _ = ask([CUT, WHOLE])  # the retry continues what was shown
    assert text == ANSWER
    assert finish == "stop"


@pytest.mark.parametrize("fallback", [True, False])
def test_a_cut_that_never_completes_ends_with_length(ask: Any, fallback: bool) -> None:
    text, finish, extra = ask([CUT, CUT], mode="llm", fallbackToRouter=fallback)
    fragment = text.split("\n\n")[0]
    assert fragment  # the fragment is in the text...
    assert ANSWER.startswith(fragment)
    assert fragment != ANSWER
    assert finish == "length"  # ...and the client is told the text is cut
    assert extra["textCut"] is True
    if fallback:
        assert "router" in text.lower()
    else:
        assert "The model server is unavailable" in text
