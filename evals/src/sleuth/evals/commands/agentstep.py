"""The agent's own first step, read from the running agent (``sleuth eval tsa --agent-url``).

``GET <agent>/v1/eval/first-step`` (:mod:`sleuth.agent.firststep`) returns the system prompt, the
``tools[]`` and the model client's options of every first model call the agent makes. Scored
with them, TSA measures the team's agent — its ToolBindings, descriptions and prompt — not
sleuth's defaults. The credential is the one ``sleuth eval ragas`` sends the agent
(:class:`~sleuth.evals.rag.agentauth.AgentCredential`): an EvalSchedule's Job holds the
``evaluation`` grant the route asks for.

The eval then sends its cases straight to the agent's model server, which may sleep at zero
replicas and would not wake for them: :func:`wake_model` first asks the agent to wake it
(``POST /v1/eval/wake``, :mod:`sleuth.agent.evalwake`), which waits up to the agent's own
``wakeWaitSeconds``.
"""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from sleuth.agent.evalwake import WAKE_PATH
from sleuth.agent.firststep import FIRST_STEP_PATH, FirstStep
from sleuth.evals.errors import EndpointError
from sleuth.evals.rag.agentauth import AgentCredential


def first_step_url(agent_url: str) -> str:
    return agent_url.rstrip("/") + FIRST_STEP_PATH


def _ask(method: str, url: str, credential: AgentCredential, timeout_s: float) -> httpx.Response:
    """The agent's 200 answer; :class:`EndpointError` naming the URL and the agent's reason."""
    try:
        response = httpx.request(method, url, headers=credential.headers(), timeout=timeout_s)
    except httpx.HTTPError as exc:
        raise EndpointError(
            f"--agent-url: {method} {url}: {type(exc).__name__}: {exc}", retryable=True
        ) from None
    if response.status_code != 200:
        raise EndpointError(
            f"--agent-url: {method} {url}: HTTP {response.status_code}: {_reason(response)}",
            retryable=response.status_code >= 500,
        )
    return response


def fetch_first_step(
    agent_url: str, credential: AgentCredential, timeout_s: float = 30.0
) -> FirstStep:
    """The agent's first step; :class:`EndpointError` naming the URL and the agent's reason."""
    url = first_step_url(agent_url)
    response = _ask("GET", url, credential, timeout_s)
    try:
        return FirstStep.model_validate_json(response.content)
    except ValidationError as exc:
        raise EndpointError(f"--agent-url: GET {url}: not a first step: {exc}") from None


WAKE_TIMEOUT_S = 900.0
"""The client's bound on a wake; the agent's own (``wakeWaitSeconds``, within its request
timeout) is the one that applies."""


def wake_model(agent_url: str, credential: AgentCredential) -> float:
    """Have the agent wake its model server; the seconds it waited. :class:`EndpointError` when
    the server did not wake within the agent's bound, or the agent refused."""
    url = agent_url.rstrip("/") + WAKE_PATH
    response = _ask("POST", url, credential, WAKE_TIMEOUT_S)
    try:
        return float(response.json()["waitedSeconds"])
    except (ValueError, KeyError, TypeError):
        raise EndpointError(f"--agent-url: POST {url}: not a wake reply") from None


def _reason(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response.text[:200]
    return str(message)[:500]


__all__ = ["WAKE_TIMEOUT_S", "fetch_first_step", "first_step_url", "wake_model"]
