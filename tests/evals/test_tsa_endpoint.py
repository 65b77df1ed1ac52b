"""TSA against an endpoint through the one model client: one retry on retryable failures only."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.core.tools import DEFAULT_SPECS
from sleuth.evals.tsa.cases import TsaCase
from sleuth.evals.tsa.runner import EndpointConfig, run_cases
from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall

pytestmark = pytest.mark.integration

CASE = TsaCase.model_validate(
    {
        "id": "a",
        "query": "What does the runbook say about failover?",
        "expected": [{"name": "vector_search", "arguments": {"query": [{"$any": True}]}}],
        "split": "dev",
    }
)
RIGHT = ScriptedResponse(
    tool_calls=[ScriptedToolCall(name="vector_search", arguments={"query": "failover"})]
)


def answers(*responses: ScriptedResponse) -> Any:
    """A responder answering the first requests with ``responses``, then the right call."""
    queue = list(responses)

    def respond(body: dict[str, Any]) -> ScriptedResponse:
        return queue.pop(0) if queue else RIGHT

    return respond


async def score(server: ScriptedServer, timeout_s: float = 10.0) -> Any:
    cfg = EndpointConfig(base_url=server.url, model="m", timeout_s=timeout_s)
    return await run_cases([CASE], [DEFAULT_SPECS["vector_search"]], cfg)


async def test_a_retryable_failure_is_tried_once_more() -> None:
    with ScriptedServer(responder=answers(ScriptedResponse(status=503))) as server:
        run = await score(server)
        bodies = server.requests()
    assert [r.passed for r in run.results] == [True]
    assert run.requests == 2
    assert len(bodies) == 2
    assert bodies[0]["tool_choice"] == "auto"
    assert bodies[0]["temperature"] == 0
    assert run.completion_tokens > 0


async def test_a_refused_request_is_not_retried_and_the_error_is_reported() -> None:
    refused = ScriptedResponse(status=400, error_message="bad request")
    with ScriptedServer(responder=answers(refused)) as server:
        run = await score(server)
    (result,) = run.results
    assert not result.passed
    assert result.error == "ModelResponseError: model server answered 400: bad request"
    assert run.requests == 1


async def test_a_timeout_is_retried_then_reported() -> None:
    slow = ScriptedResponse(content="late", delay_ms=3000)
    with ScriptedServer(responder=answers(slow, slow)) as server:
        run = await score(server, timeout_s=0.3)
    (result,) = run.results
    assert result.error == "ModelTimeout: model call timed out after 0.3 s"
    assert run.requests == 2


@pytest.mark.parametrize(
    ("reply", "predicted", "malformed", "text_call"),
    [
        (RIGHT, "vector_search", False, False),
        (
            ScriptedResponse(content='{"name": "vector_search", "argu', raw=True),
            "error",
            True,
            False,
        ),
        (
            ScriptedResponse(content='{"answer": "It says', raw=True, finish_reason="length"),
            "none",
            False,
            False,
        ),
    ],
)
async def test_guided_tsa_scores_the_parsed_reply(
    reply: ScriptedResponse, predicted: str, malformed: bool, text_call: bool
) -> None:
    """A reply cut inside its calls is malformed; one cut inside its answer decided no tool."""
    with ScriptedServer(responder=answers(reply)) as server:
        cfg = EndpointConfig(base_url=server.url, model="m", tool_calling="guided")
        run = await run_cases([CASE], [DEFAULT_SPECS["vector_search"]], cfg)
        (body,) = server.requests()
    assert body["response_format"]["type"] == "json_schema"
    assert body["tool_choice"] == "none"
    (result,) = run.results
    assert (result.predicted_label, result.malformed, result.text_call) == (
        predicted,
        malformed,
        text_call,
    )
    assert result.seconds is not None
    assert run.extra["tool_calling"] == "guided"


async def test_native_text_that_holds_a_call_is_counted() -> None:
    written = ScriptedResponse(
        content='```json\n{"name": "vector_search", "arguments": {"query": "failover"}}\n```'
    )
    with ScriptedServer(responder=answers(written)) as server:
        run = await score(server)
    (result,) = run.results
    assert (result.predicted_label, result.text_call, result.malformed) == ("none", True, False)


async def test_the_model_servers_api_key_is_sent() -> None:
    """The eval Job's `tsa` container gets the model server's key (SLEUTH_EVAL_API_KEY, the
    default of --api-key): a server started with a key (vLLM's VLLM_API_KEY) answers with it and
    refuses without it."""
    key = "k-" + "5" * 30
    with ScriptedServer(responder=answers(), api_key=key) as server:
        cfg = EndpointConfig(base_url=server.url, model="m", api_key=key, timeout_s=10)
        run = await run_cases([CASE], [DEFAULT_SPECS["vector_search"]], cfg)
        assert [r.passed for r in run.results] == [True]
        assert server.state.unauthorized == 0
        wrong = EndpointConfig(base_url=server.url, model="m", timeout_s=10)
        run = await run_cases([CASE], [DEFAULT_SPECS["vector_search"]], wrong)
        assert [r.passed for r in run.results] == [False]
        assert server.state.unauthorized >= 1


def test_no_example_is_a_question_of_the_tsa_set() -> None:
    """The examples teach the shapes; tuning on the scored questions would inflate TSA."""
    from sleuth.core.guidedprompt import EXAMPLES
    from sleuth.evals.tsa.cases import load_cases, shipped_cases_path

    asked = {c.query.casefold() for c in load_cases(shipped_cases_path(), "all")}
    assert asked
    assert not asked & {e.question.casefold() for e in EXAMPLES}
