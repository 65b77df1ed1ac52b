"""Who may ask the agent: ``sleuth agent`` as a process with ``access`` configured, asked with
real credentials — API keys from key directories, JWTs of an issuer whose JWKS is served over
HTTP — through raw HTTP, the ``openai`` SDK and the ``a2a-sdk`` client."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

from sleuth.scripted import LatencyProfile, Scenario, ScriptedServer
from tests.agent.access_kit import LocalIssuer, audit_records, key_directory, new_key
from tests.agent.agent_doubles import SEED_QUESTION, SEED_SQL, seed_tools, seed_turns
from tests.agent.agent_process import AgentProcess
from tests.support.metrics import parse_samples

pytestmark = pytest.mark.integration

AUDIENCE = "sleuth.dev/agent/test/ops"
DASHBOARD_KEY = new_key()
ANALYST_KEY = new_key()


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(Scenario(turns=seed_turns(), latency=LatencyProfile())) as server:
        yield server


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    with LocalIssuer() as running:
        yield running


def access_config(keys: Path, issuer: LocalIssuer, **extra: Any) -> dict[str, Any]:
    return {
        "issuers": [{"issuer": issuer.issuer, "jwksUrl": issuer.jwks_url, "audiences": [AUDIENCE]}],
        "callers": [
            {"name": "dashboard", "apiKeyDirectory": str(keys / "dashboard")},
            {"name": "analyst", "apiKeyDirectory": str(keys / "analyst"), "grants": ["trace"]},
            {
                "name": "gateway",
                "token": {
                    "issuer": issuer.issuer,
                    "subject": "svc-gateway",
                    "claims": [{"name": "groups", "value": "agents"}],
                },
            },
            {"name": "absent", "apiKeyDirectory": str(keys / "absent")},
        ],
        **extra,
    }


def agent_config(model_url: str, access: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "tools": seed_tools(),
        "planner": {"fallbackToRouter": False},
        **extra,
    }
    if access is not None:
        config["access"] = access
    return config


@pytest.fixture(scope="module")
def agent(
    model: ScriptedServer, issuer: LocalIssuer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AgentProcess]:
    workdir = tmp_path_factory.mktemp("access")
    keys = workdir / "keys"
    key_directory(keys, "dashboard", DASHBOARD_KEY)
    key_directory(keys, "analyst", ANALYST_KEY, "short")  # a short key admits no one
    config = agent_config(model.url, access_config(keys, issuer))
    with AgentProcess(config, workdir, name="ops") as process:
        yield process


def _ask(url: str, credential: str | None, **headers: str) -> httpx.Response:
    if credential is not None:
        headers["Authorization"] = f"Bearer {credential}"
    return httpx.post(f"{url}/v1/query", json={"question": SEED_QUESTION}, headers=headers)


def test_without_a_valid_credential_every_request_gets_the_same_401(
    agent: AgentProcess, issuer: LocalIssuer
) -> None:
    other = LocalIssuer(issuer="https://other.test")
    refused = {
        "no header": None,
        "unknown key": new_key(),
        "short key": "short",
        "forged token": issuer.forged("svc-gateway", AUDIENCE),
        "expired token": issuer.token("svc-gateway", AUDIENCE, expires_in=-120, groups=["agents"]),
        "wrong audience": issuer.token("svc-gateway", "someone-else", groups=["agents"]),
        "alg none": issuer.unsigned("svc-gateway", AUDIENCE),
        "unknown issuer": other.token("svc-gateway", AUDIENCE, groups=["agents"]),
        "no caller admits the subject": issuer.token("intruder", AUDIENCE, groups=["agents"]),
        "a claim missing": issuer.token("svc-gateway", AUDIENCE, groups=["others"]),
    }
    bodies = set()
    for what, credential in refused.items():
        resp = _ask(agent.url, credential)
        assert resp.status_code == 401, (what, resp.text)
        assert resp.headers["www-authenticate"] == 'Bearer realm="sleuth-agent"', what
        assert resp.headers["connection"] == "close", what
        bodies.add(resp.text)
    assert bodies == {
        '{"error":{"message":"authentication required","type":"unauthorized","field":null}}'
    }
    basic = httpx.post(
        f"{agent.url}/v1/chat/completions", json={}, headers={"Authorization": "Basic eDp5"}
    )
    assert basic.status_code == 401
    for path in ("/v1/models", "/a2a", "/nowhere"):  # every route but the public ones
        assert httpx.get(f"{agent.url}{path}").status_code == 401, path


def test_health_metrics_and_the_card_stay_public_and_the_card_declares_its_schemes(
    agent: AgentProcess,
) -> None:
    assert httpx.get(f"{agent.url}/healthz").status_code == 200
    assert httpx.get(f"{agent.url}/metrics").status_code == 200
    card = httpx.get(f"{agent.url}/.well-known/agent-card.json").json()
    schemes = card["securitySchemes"]
    assert schemes["apiKey"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert schemes["jwt"]["httpAuthSecurityScheme"]["bearerFormat"] == "JWT"
    assert AUDIENCE in schemes["jwt"]["httpAuthSecurityScheme"]["description"]
    assert {tuple(r["schemes"]) for r in card["securityRequirements"]} == {("apiKey",), ("jwt",)}


def test_the_openai_sdk_asks_with_its_api_key_and_sees_the_trace_only_when_granted(
    agent: AgentProcess,
) -> None:
    for key, granted in ((DASHBOARD_KEY, False), (ANALYST_KEY, True)):
        client = openai.OpenAI(api_key=key, base_url=f"{agent.url}/v1", max_retries=0)
        completion = client.chat.completions.create(
            model="ops", messages=[{"role": "user", "content": SEED_QUESTION}]
        )
        assert "47" in (completion.choices[0].message.content or "")
        extra = completion.model_extra or {}
        assert ("trace" in extra["sleuth"]) is granted
        assert extra["sleuth"]["citations"]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(api_key=new_key(), base_url=f"{agent.url}/v1", max_retries=0).models.list()
    body = _ask(agent.url, DASHBOARD_KEY).json()
    assert "trace" not in body
    assert body["citations"]
    assert "trace" in _ask(agent.url, ANALYST_KEY).json()


def test_a_token_of_the_issuer_with_the_subject_and_claims_is_admitted(
    agent: AgentProcess, issuer: LocalIssuer
) -> None:
    token = issuer.token("svc-gateway", AUDIENCE, groups=["readers", "agents"])
    resp = _ask(agent.url, token)
    assert resp.status_code == 200, resp.text
    records = [r for r in audit_records(agent.log.read_text()) if r["caller"] == "gateway"]
    assert records[-1]["proof"] == "token"
    assert records[-1]["subject"] == "svc-gateway"


def test_a_key_directory_that_cannot_be_read_admits_nobody_and_says_which(
    agent: AgentProcess,
) -> None:
    log = agent.log.read_text()
    assert "caller absent has no usable API key" in log
    assert "absent" in log
    assert "No such file or directory" in log
    assert "caller analyst: ignored" in log
    assert "shorter than 16 characters" in log


def _message(text: str) -> SendMessageRequest:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    return SendMessageRequest(message=message)


async def _a2a(url: str, key: str) -> Any:
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    card = await A2ACardResolver(http, url).get_agent_card()
    return await create_client(card, client_config=ClientConfig(httpx_client=http))


def test_a2a_tasks_stay_with_the_caller_that_created_them(agent: AgentProcess) -> None:
    async def go() -> None:
        owner = await _a2a(agent.url, DASHBOARD_KEY)
        other = await _a2a(agent.url, ANALYST_KEY)
        try:
            events = [e async for e in owner.send_message(_message(SEED_QUESTION))]
            task = next(e.task for e in events if e.HasField("task"))
            mine = await owner.get_task(GetTaskRequest(id=task.id))
            assert mine.status.state == TaskState.TASK_STATE_COMPLETED
            listed = await owner.list_tasks(ListTasksRequest(include_artifacts=True))
            assert task.id in [t.id for t in listed.tasks]
            theirs = await other.list_tasks(ListTasksRequest(include_artifacts=True))
            assert task.id not in [t.id for t in theirs.tasks]
            assert SEED_QUESTION not in str(theirs)
            with pytest.raises(Exception, match=r"(?i)not found"):
                await other.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(Exception, match=r"(?i)not found"):
                await other.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(Exception, match=r"(?i)not found"):  # nor resubscribe to it
                async for _ in other.subscribe(SubscribeToTaskRequest(id=task.id)):
                    pass
        finally:
            await owner.close()
            await other.close()

    asyncio.run(go())
    refused = httpx.post(
        f"{agent.url}/a2a",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        headers={"A2A-Version": "1.0"},
    )
    assert refused.status_code == 401


def test_every_request_leaves_an_audit_record_and_no_credential_is_anywhere(
    agent: AgentProcess, issuer: LocalIssuer
) -> None:
    token = issuer.token("svc-gateway", AUDIENCE, groups=["agents"])
    assert _ask(agent.url, token).status_code == 200
    assert _ask(agent.url, "not-a-key-but-long-enough-123").status_code == 401
    log = agent.log.read_text()
    records = audit_records(log)
    answered = [r for r in records if r["outcome"] == "answered" and r["endpoint"] == "query"]
    record = answered[-1]
    assert record["caller"] == "gateway"
    assert record["agent"] == "ops"
    assert record["question"] == SEED_QUESTION
    sql = record["toolCalls"][0]
    assert sql["tool"] == "sql_query"
    assert sql["arguments"] == SEED_SQL
    assert record["toolCalls"][1]["tool"] == "vector_search"
    assert record["toolCalls"][1]["results"] == 3
    assert record["stopReason"] == "answered"
    assert record["promptTokens"] > 0
    refused = [r for r in records if r["outcome"] == "unauthenticated"]
    assert refused
    assert refused[-1]["caller"] is None
    assert refused[-1]["endpoint"] == "query"
    assert {r["endpoint"] for r in records} >= {"query", "chat_completions", "a2a"}
    for secret in (DASHBOARD_KEY, ANALYST_KEY, token, "not-a-key-but-long-enough-123"):
        assert secret not in log
    assert token.split(".")[2] not in log  # not even the signature
    samples = parse_samples(httpx.get(f"{agent.url}/metrics").text)
    requests = {
        dict(labels)["caller"]: v
        for (name, labels), v in samples.items()
        if name == "sleuth_agent_caller_requests_total"
    }
    assert requests.get("gateway", 0) >= 1
    assert requests.get("unauthenticated", 0) >= 1
    tokens = [
        v
        for (name, labels), v in samples.items()
        if name == "sleuth_agent_caller_tokens_total" and dict(labels)["caller"] == "gateway"
    ]
    assert sum(tokens) > 0
