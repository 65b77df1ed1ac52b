"""The access module's parts on their own: key matching, fair share, the task store's bounds,
the policy's matching, the eval header, the audit record's question digest, configuration
errors that name the field."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from a2a.server.context import ServerCallContext
from a2a.types import ListTasksRequest, Task
from pydantic import ValidationError

from sleuth.agent.access.audit import AuditLog
from sleuth.agent.access.caller import Caller
from sleuth.agent.access.fairshare import ACTIVE_WINDOW_S, FairShare
from sleuth.agent.access.identity import bearer_of
from sleuth.agent.access.keys import KeyRing
from sleuth.agent.access.policy import Policy
from sleuth.agent.access.tasks import BoundedTaskStore, CallerUser
from sleuth.agent.access.tokens import TokenIdentity
from sleuth.agent.service import AgentService
from sleuth.agent.trace import Trace
from sleuth.core.api.access_config import AccessConfig, CallerConfig
from sleuth.core.api.agent_config import AgentConfig
from tests.agent.access_kit import key_directory, new_key

pytestmark = pytest.mark.unit


def test_a_key_matches_its_caller_and_nothing_else(tmp_path: Path) -> None:
    a, b = new_key(), new_key()
    ring = KeyRing(
        {"a": key_directory(tmp_path, "a", a), "b": key_directory(tmp_path, "b", b, "tiny")}
    )
    ring.reload()
    assert ring.match(a) is not None
    assert ring.match(a).caller == "a"
    assert ring.match(b).caller == "b"  # type: ignore[union-attr]
    assert ring.match("tiny") is None
    assert ring.match(a + "x") is None
    assert ring.match("") is None
    assert ring.count("b") == 1
    assert "shorter than 16" in ring.skipped["b"]


def test_a_removed_directory_takes_its_keys_with_it(tmp_path: Path) -> None:
    key = new_key()
    directory = key_directory(tmp_path, "a", key)
    ring = KeyRing({"a": directory})
    ring.reload()
    assert ring.match(key) is not None
    for f in directory.iterdir():
        f.unlink()
    directory.rmdir()
    ring.reload()
    assert ring.match(key) is None
    assert "a" in ring.problems


def test_bearer_credentials_are_read_strictly() -> None:
    assert bearer_of("Bearer abc") == "abc"
    assert bearer_of("bearer   abc ") == "abc"
    for value in (None, "", "Basic abc", "Bearer", "Bearer a b", "abc"):
        assert bearer_of(value) is None


def test_a_caller_alone_may_use_every_slot_and_two_share_them() -> None:
    now = [0.0]
    fair = FairShare(4, clock=lambda: now[0])
    assert [fair.try_acquire("a") for _ in range(5)] == [None, None, None, None, "full"]
    for _ in range(4):
        fair.release("a")
    assert fair.try_acquire("b") is None  # b is active now: shares are 2 each
    assert [fair.try_acquire("a") for _ in range(3)] == [None, None, "share"]
    assert fair.try_acquire("b") is None
    assert fair.total == 4
    for caller in ("a", "a", "b", "b"):
        fair.release(caller)
    now[0] += ACTIVE_WINDOW_S + 1  # b went quiet: a has all the slots again
    assert [fair.try_acquire("a") for _ in range(4)] == [None] * 4


def _context(caller: Caller) -> ServerCallContext:
    return ServerCallContext(user=CallerUser(caller))


def test_the_task_store_keeps_tasks_per_caller_and_forgets_old_ones() -> None:
    now = [0.0]
    store = BoundedTaskStore(ttl_s=100, max_tasks=3, clock=lambda: now[0])
    a, b = _context(Caller("a", "api_key", "k")), _context(Caller("b", "api_key", "k"))

    async def go() -> None:
        await store.save(Task(id="t1", context_id="c"), a)
        assert await store.get("t1", a) is not None
        assert await store.get("t1", b) is None
        assert not (await store.list(ListTasksRequest(), b)).tasks
        for i in range(2, 6):
            now[0] += 1
            await store.save(Task(id=f"t{i}", context_id="c"), a)
        assert len(store) == 3
        assert await store.get("t1", a) is None
        now[0] += 101
        assert await store.get("t5", a) is None
        assert len(store) == 0

    asyncio.run(go())


def test_two_subjects_of_one_token_caller_do_not_share_tasks() -> None:
    from sleuth.agent.access.tasks import owner_of

    one, two = Caller("gw", "token", "s1"), Caller("gw", "token", "s2")
    assert owner_of(one) != owner_of(two)
    assert owner_of(Caller("k", "api_key", "key-1")) == owner_of(Caller("k", "api_key", "key-2"))


def test_the_policy_matches_service_accounts_only_from_a_kubernetes_issuer() -> None:
    config = AccessConfig.model_validate(
        {
            "issuers": [
                {
                    "issuer": "https://k8s",
                    "jwksUrl": "https://k8s/jwks",
                    "audiences": ["a"],
                    "serviceAccounts": True,
                },
                {"issuer": "https://idp", "jwksUrl": "https://idp/jwks", "audiences": ["a"]},
            ],
            "callers": [
                {
                    "name": "eval",
                    "serviceAccount": {"namespace": "t", "name": "e"},
                    "grants": ["trace", "evaluation"],
                },
            ],
        }
    )
    policy = Policy(config.callers)
    sub = "system:serviceaccount:t:e"
    found = policy.by_token(TokenIdentity("https://k8s", sub, {"sub": sub}, True))
    assert found is not None
    assert found.evaluation
    assert found.trace
    assert policy.by_token(TokenIdentity("https://idp", sub, {"sub": sub}, False)) is None
    other = "system:serviceaccount:t:other"
    assert policy.by_token(TokenIdentity("https://k8s", other, {}, True)) is None


def test_the_eval_header_counts_only_for_callers_granted_evaluation() -> None:
    service = AgentService(
        AgentConfig.model_validate(
            {"model": {"endpoint": "http://127.0.0.1:9/v1", "servedModelName": "m"}}
        )
    )
    headers = {"x-sleuth-eval": "1"}
    assert service.sample_of(Caller("eval", "token", "s", evaluation=True), headers) is False
    assert service.sample_of(Caller("dash", "api_key", "k"), headers) is True
    assert service.sample_of(Caller("eval", "token", "s", evaluation=True), {}) is True


@pytest.mark.parametrize(
    ("access", "field"),
    [
        ({"callers": [{"name": "x"}]}, "access.callers[x]: set exactly one of"),
        (
            {"callers": [{"name": "x", "token": {"issuer": "https://nope"}}]},
            "access.callers[x].token.issuer",
        ),
        (
            {"callers": [{"name": "x", "serviceAccount": {"namespace": "a", "name": "b"}}]},
            "access.callers[x].serviceAccount",
        ),
        (
            {"callers": [{"name": "x", "apiKeyDirectory": "/k"}] * 2},
            "caller 'x' is listed twice",
        ),
        ({"callers": [{"name": "Bad Name", "apiKeyDirectory": "/k"}]}, "name"),
        ({"callers": [], "audit": {"question": "sometimes"}}, "audit.question"),
    ],
)
def test_a_bad_access_configuration_names_the_field(access: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as err:
        AgentConfig.model_validate(
            {"model": {"endpoint": "http://m/v1", "servedModelName": "m"}, "access": access}
        )
    assert field in str(err.value)


def test_caller_config_grants_are_unique() -> None:
    with pytest.raises(ValidationError, match="listed twice"):
        CallerConfig.model_validate(
            {"name": "x", "apiKeyDirectory": "/k", "grants": ["trace", "trace"]}
        )


def test_with_question_digest_the_audit_record_holds_only_the_questions_sha256() -> None:
    question = "Which contracts with Provider B carry a late-delivery penalty?"
    lines: list[str] = []
    caller = Caller("dashboard", "api_key", "key-2026-12")
    audit = AuditLog("contracts", "digest", lines.append)
    audit.answered(caller, "query", question, Trace(question=question, model="m"), "ab" * 16)
    audit.refused(caller, "query", "overloaded", question)
    audit.refused(None, "query", "unauthenticated")
    digest = hashlib.sha256(question.encode()).hexdigest()
    answered, overloaded, refused = (json.loads(line) for line in lines)
    for record in (answered, overloaded):
        assert record["questionSha256"] == digest
        assert "question" not in record
    assert "questionSha256" not in refused  # no question was read
    assert refused["caller"] is None
    assert "Provider B" not in "".join(lines)
    full: list[str] = []
    AuditLog("contracts", "full", full.append).refused(caller, "query", "invalid", question)
    assert json.loads(full[0])["question"] == question
