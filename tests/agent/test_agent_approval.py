"""A person approves before a tool acts: ``sleuth agent`` as a process with a web_search under
approval, asked through the ``a2a-sdk`` client, the ``openai`` SDK and raw HTTP with real API
keys; the scripted model server plans sql_query, then a web_search quoting its result."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_data_parts
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)

from sleuth.scripted import ScriptedServer
from tests.agent.access_kit import audit_records
from tests.agent.agent_process import AgentProcess
from tests.agent.approval_kit import (
    ANSWER_WITH_WEB,
    ANSWER_WITHOUT_WEB,
    KEYS,
    QUESTION,
    WEB_QUERY,
    approval_config,
    bearer,
    scenario,
)
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

PENDING = "sleuth_agent_approvals_pending"
DECISIONS = "sleuth_agent_approval_decisions_total"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer(scenario()) as server:
        yield server


@pytest.fixture(scope="module")
def agent(
    model: ScriptedServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AgentProcess]:
    workdir = tmp_path_factory.mktemp("approval")
    config = approval_config(model.url, workdir / "keys")
    with AgentProcess(config, workdir, name="approvals") as process:
        yield process


# -- A2A ----------------------------------------------------------------------------------------


async def _client(url: str, caller: str) -> Any:
    http = httpx.AsyncClient(headers=bearer(caller), timeout=60)
    card = await A2ACardResolver(http, url).get_agent_card()
    return await create_client(card, client_config=ClientConfig(httpx_client=http))


async def _send(client: Any, text: str, task: Task | None = None) -> list[StreamResponse]:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    return [e async for e in client.send_message(SendMessageRequest(message=message))]


def _status(events: list[StreamResponse]) -> TaskStatus:
    for event in reversed(events):
        if event.HasField("status_update"):
            return event.status_update.status
        if event.HasField("task"):
            return event.task.status
    raise AssertionError(f"no status in {events}")


def _task(events: list[StreamResponse]) -> Task:
    return next(e.task for e in events if e.HasField("task"))


def _answer(task: Task) -> str:
    (artifact,) = [a for a in task.artifacts if a.artifact_id == "answer"]
    return get_artifact_text(artifact, delimiter="")


def _pause(url: str, caller: str = "portal") -> tuple[Task, dict[str, Any]]:
    """Ask over A2A until the task waits for input; the task and its approval data."""

    async def go() -> tuple[Task, dict[str, Any]]:
        client = await _client(url, caller)
        try:
            events = await _send(client, QUESTION)
        finally:
            await client.close()
        status = _status(events)
        assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED, status
        (data,) = get_data_parts(status.message.parts)
        return _task(events), data["approval"]

    return asyncio.run(go())


def _decide(url: str, task: Task, text: str, caller: str = "portal") -> Task:
    async def go() -> Task:
        client = await _client(url, caller)
        try:
            events = await _send(client, text, task)
            assert _status(events).state == TaskState.TASK_STATE_COMPLETED, _status(events)
            return await client.get_task(GetTaskRequest(id=task.id))
        finally:
            await client.close()

    return asyncio.run(go())


def _records(agent: AgentProcess, approval_id: str) -> list[dict[str, Any]]:
    return [
        r
        for r in audit_records(agent.log.read_text(encoding="utf-8"))
        if r.get("approval", {}).get("id") == approval_id
    ]


def test_a2a_input_required_then_approved_runs_the_call_and_answers(agent: AgentProcess) -> None:
    task, approval = _pause(agent.url)
    (call,) = approval["calls"]
    assert call["tool"] == "web_search"
    assert call["arguments"] == WEB_QUERY
    assert "'47'" in call["why"]  # the figure sql_query returned
    assert approval["id"] == task.id
    assert agent.value(PENDING, agent="approvals", caller="portal") == 1.0

    done = _decide(agent.url, task, "approve")
    assert _answer(done) == ANSWER_WITH_WEB
    assert agent.value(PENDING, agent="approvals", caller="portal") == 0.0
    assert agent.value(DECISIONS, agent="approvals", decision="approved") == 1.0
    requested, approved = _records(agent, task.id)
    assert requested["outcome"] == "approval_requested"
    assert requested["approval"]["calls"][0]["arguments"] == WEB_QUERY
    assert approved["outcome"] == "approval_approved"
    assert approved["approval"]["by"] == "portal"
    assert approved["approval"]["waitedMs"] > 0
    runs = [
        r
        for r in audit_records(agent.log.read_text(encoding="utf-8"))
        if r.get("endpoint") == "a2a" and r["outcome"] in ("paused", "answered")
    ][-2:]
    assert [r["outcome"] for r in runs] == ["paused", "answered"]
    # Each leg's record and metrics count what that leg did: sql_query once, then the search.
    assert [c["tool"] for c in runs[0]["toolCalls"]] == ["sql_query"]
    assert [(c["tool"], c["status"]) for c in runs[1]["toolCalls"]] == [("web_search", "ok")]
    calls = "sleuth_agent_tool_calls_total"
    assert agent.value(calls, agent="approvals", tool="sql_query", outcome="ok") == 1.0
    assert agent.value(calls, agent="approvals", tool="web_search", outcome="ok") == 1.0


def test_a2a_rejection_yields_an_answer_that_says_the_call_was_refused(
    agent: AgentProcess,
) -> None:
    task, _ = _pause(agent.url)
    done = _decide(agent.url, task, "reject: internal figures stay inside")
    answer = _answer(done)
    assert answer.startswith(ANSWER_WITHOUT_WEB)
    assert "web_search (rejected by portal: internal figures stay inside)" in answer
    (_, rejected) = _records(agent, task.id)
    assert rejected["outcome"] == "approval_rejected"
    assert rejected["approval"]["reason"] == "internal figures stay inside"


def test_a2a_an_unclear_reply_asks_again_and_keeps_the_call_waiting(agent: AgentProcess) -> None:
    task, _ = _pause(agent.url)

    async def go() -> TaskStatus:
        client = await _client(agent.url, "portal")
        try:
            return _status(await _send(client, "maybe later?", task))
        finally:
            await client.close()

    status = asyncio.run(go())
    assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "approve" in status.message.parts[0].text
    assert agent.value(PENDING, agent="approvals", caller="portal") == 1.0
    assert _answer(_decide(agent.url, task, "approve")) == ANSWER_WITH_WEB


def test_a_second_caller_cannot_decide_someone_elses_call(agent: AgentProcess) -> None:
    task, _ = _pause(agent.url)

    async def intrude() -> None:
        client = await _client(agent.url, "other")  # may approve, but not portal's calls
        try:
            with pytest.raises(Exception, match=r"(?i)not found"):
                await _send(client, "approve", task)
        finally:
            await client.close()

    asyncio.run(intrude())
    assert agent.value(PENDING, agent="approvals", caller="portal") == 1.0
    # Over HTTP too: portal's addressed approval, sent by other, decides nothing.
    paused = httpx.post(
        f"{agent.url}/v1/query", json={"question": QUESTION}, headers=bearer("portal"), timeout=60
    ).json()
    approval_id = paused["approval"]["id"]
    intruded = httpx.post(
        f"{agent.url}/v1/query",
        json={"question": f"approve {approval_id}"},
        headers=bearer("other"),
        timeout=60,
    )
    assert intruded.status_code == 200
    assert intruded.json()["answer"].startswith(f"No approval {approval_id} waits for you")
    assert agent.value(PENDING, agent="approvals", caller="portal") == 2.0
    assert _answer(_decide(agent.url, task, "approve")) == ANSWER_WITH_WEB
    decided = httpx.post(
        f"{agent.url}/v1/query",
        json={"question": f"reject {approval_id}: no"},
        headers=bearer("portal"),
        timeout=60,
    ).json()
    assert decided["answer"].startswith(ANSWER_WITHOUT_WEB)
    assert agent.value(PENDING, agent="approvals", caller="portal") == 0.0


def test_a_caller_without_the_approve_grant_gets_the_call_refused_at_once(
    agent: AgentProcess,
) -> None:
    body = httpx.post(
        f"{agent.url}/v1/query", json={"question": QUESTION}, headers=bearer("batch"), timeout=60
    ).json()
    assert "approval" not in body
    assert body["answer"].startswith(ANSWER_WITHOUT_WEB)
    assert "caller batch holds no approve grant" in body["answer"]
    statuses = [c["status"] for s in body["trace"]["steps"] for c in s.get("calls", [])]
    assert statuses in (["ok", "not_approved"], ["cached", "not_approved"])
    (record,) = body["trace"]["approvals"]
    assert record["decision"] == "refused"


# -- the OpenAI API -----------------------------------------------------------------------------


def test_openai_sdk_sees_a_pending_approval_and_continues_with_a_message(
    agent: AgentProcess,
) -> None:
    client = openai.OpenAI(base_url=f"{agent.url}/v1", api_key=KEYS["portal"], max_retries=0)
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    first = client.chat.completions.create(model="approvals", messages=messages)
    choice = first.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content is not None
    assert choice.message.content.startswith("Approval needed before the agent acts: web_search")
    approval = (first.model_extra or {})["sleuth"]["approval"]
    assert approval["status"] == "pending"
    assert approval["approve"] in choice.message.content

    messages += [
        {"role": "assistant", "content": choice.message.content},
        {"role": "user", "content": approval["approve"]},
    ]
    stream = client.chat.completions.create(model="approvals", messages=messages, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == ANSWER_WITH_WEB
    again = client.chat.completions.create(model="approvals", messages=messages)
    assert (again.choices[0].message.content or "").startswith(
        f"No approval {approval['id']} waits for you"
    )


def test_a_streamed_pause_ends_with_the_approval_in_the_finish_chunk(agent: AgentProcess) -> None:
    client = openai.OpenAI(base_url=f"{agent.url}/v1", api_key=KEYS["portal"], max_retries=0)
    question: list[Any] = [{"role": "user", "content": QUESTION}]
    chunks = list(client.chat.completions.create(model="approvals", messages=question, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finish] == ["stop"]
    approval = (finish[0].model_extra or {})["sleuth"]["approval"]
    assert text.endswith(
        f"Send '{approval['approve']}' or '{approval['reject']}' as the next "
        f"message before {approval['expiresAt']}; otherwise the call is not run."
    )
    decided = client.chat.completions.create(
        model="approvals",
        messages=[{"role": "user", "content": f"reject {approval['id']}: not now"}],
    )
    assert (decided.choices[0].message.content or "").startswith(ANSWER_WITHOUT_WEB)
    assert agent.value(PENDING, agent="approvals", caller="portal") == 0.0


# -- expiry and restart -------------------------------------------------------------------------


def test_a_timeout_frees_the_state_and_the_task_answers_without_the_call(
    model: ScriptedServer, tmp_path: Path
) -> None:
    """Bounded in time (2 s here) and in number (2 waiting runs per caller here)."""
    config = approval_config(
        model.url, tmp_path / "keys", timeout_s=2, approvals={"maxPendingPerCaller": 2}
    )
    with AgentProcess(config, tmp_path, name="expiry") as agent:
        task, approval = _pause(agent.url)
        assert agent.value(PENDING, agent="expiry", caller="portal") == 1.0
        paused = httpx.post(
            f"{agent.url}/v1/query", json={"question": QUESTION}, headers=bearer("portal")
        ).json()
        assert paused["approval"]["expiresAt"]
        third = httpx.post(
            f"{agent.url}/v1/query", json={"question": QUESTION}, headers=bearer("portal")
        ).json()
        assert "approval" not in third  # no room: refused at once, and the answer says why
        assert "this caller already has 2 runs waiting for approval" in third["answer"]
        assert agent.value(PENDING, agent="expiry", caller="portal") == 2.0
        started = time.monotonic()
        agent.wait_for(DECISIONS, 2.0, timeout_s=30, agent="expiry", decision="expired")
        assert time.monotonic() - started < 15
        assert agent.value(PENDING, agent="expiry", caller="portal") == 0.0

        async def get() -> Task:
            client = await _client(agent.url, "portal")
            try:
                return await client.get_task(GetTaskRequest(id=task.id))
            finally:
                await client.close()

        def completed() -> Task:
            got = asyncio.run(get())
            assert got.status.state == TaskState.TASK_STATE_COMPLETED, got.status
            return got

        done = eventually(completed, timeout=30, what="the expired task completes on its own")
        answer = _answer(done)
        assert answer.startswith(ANSWER_WITHOUT_WEB)
        assert "nobody approved it in time (no decision within 2 s)" in answer
        approval_id = paused["approval"]["id"]

        def late() -> str:
            answer: str = httpx.post(
                f"{agent.url}/v1/query",
                json={"question": f"approve {approval_id}"},
                headers=bearer("portal"),
            ).json()["answer"]
            assert answer.startswith(f"Approval {approval_id} expired before your decision")
            return answer

        assert ANSWER_WITHOUT_WEB in eventually(late, timeout=30, what="the late answer")
        (expired,) = [r for r in _records(agent, task.id) if r["outcome"] == "approval_expired"]
        assert expired["approval"]["by"] is None
        assert approval["id"] == task.id


def test_cancelling_a_waiting_task_frees_its_state(agent: AgentProcess) -> None:
    task, _ = _pause(agent.url)

    async def cancel() -> Task:
        client = await _client(agent.url, "portal")
        try:
            return await client.cancel_task(CancelTaskRequest(id=task.id))
        finally:
            await client.close()

    assert asyncio.run(cancel()).status.state == TaskState.TASK_STATE_CANCELED
    assert agent.value(PENDING, agent="approvals", caller="portal") == 0.0
    (_, refused) = _records(agent, task.id)
    assert refused["outcome"] == "approval_refused"
    assert refused["approval"]["reason"] == "the task was cancelled"


def test_a_restart_refuses_waiting_calls_on_the_record_and_runs_none_later(
    model: ScriptedServer, tmp_path: Path
) -> None:
    """Waiting runs live in memory: stopping the agent decides each one ``refused`` in the
    audit trail; after the restart their ids are unknown and a decision runs nothing."""
    config = approval_config(model.url, tmp_path / "keys")
    first = AgentProcess(config, tmp_path, name="restart")
    with first:
        paused = httpx.post(
            f"{first.url}/v1/query", json={"question": QUESTION}, headers=bearer("portal")
        ).json()
        approval_id = paused["approval"]["id"]
    log = first.log.read_text(encoding="utf-8")
    (requested, stopped) = _records(first, approval_id)
    assert requested["outcome"] == "approval_requested"
    assert stopped["outcome"] == "approval_refused"
    assert stopped["approval"]["reason"] == "the agent stopped before anyone decided"
    assert log  # the first process's output, kept apart from the second's

    second = AgentProcess(config, tmp_path, name="restart-2")
    with second:
        body = httpx.post(
            f"{second.url}/v1/query",
            json={"question": f"approve {approval_id}"},
            headers=bearer("portal"),
        ).json()
        assert body["answer"].startswith(f"No approval {approval_id} waits for you")
        assert "the agent restarted" in body["answer"]
        assert body["trace"]["steps"] == []  # nothing ran
