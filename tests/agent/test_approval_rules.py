"""Which calls wait for a person (the approval rules) and how one turn is screened (the gate)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sleuth.agent.approval.decision import parse_addressed, parse_reply
from sleuth.agent.approval.gate import TurnGate
from sleuth.agent.approval.rules import ApprovalRules, carried_output, read_listed_table
from sleuth.agent.trace import ApprovalRecord, PendingCall, Trace
from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.llm import ModelTurn, ToolCallRequest

pytestmark = pytest.mark.unit

QUESTION = "How many contracts above 100k€ did we sign in 2025 with EU providers?"
SQL_OUTPUT = '{"num_contracts": 47, "total_eur": 8300000, "top_provider": "Acme Industrial Parts"}'
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are sleuth."},
    {"role": "user", "content": QUESTION},
    {"role": "tool", "tool_call_id": "c1", "content": SQL_OUTPUT},
]


@pytest.mark.parametrize(
    ("query", "carried"),
    [
        ("EU contracts 2025 above 100k", None),  # the question's own figures
        ("47 EU contracts market share", "47"),
        ("contracts worth 8,300,000 EUR", "8300000"),
        ("acme industrial parts reviews", "acme industrial parts"),
        ("Acme reviews", None),  # one word is no fragment
    ],
)
def test_tool_output_is_caught_in_the_arguments_and_the_question_is_not(
    query: str, carried: str | None
) -> None:
    assert carried_output({"query": query, "top_k": 5}, MESSAGES) == carried


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        ("SELECT name FROM hr.salaries", "it reads table hr.salaries"),
        (
            "SELECT * FROM contracts c JOIN public.payroll p ON true",
            "it reads table public.payroll",
        ),
        ("SELECT count(*) FROM contracts", None),
        ("WITH payroll AS (SELECT 1) SELECT * FROM payroll", None),  # a WITH name, not the table
        ("DELETE FROM payroll", "its SQL cannot be read"),  # fails closed
    ],
)
def test_sql_is_caught_by_the_tables_it_reads(sql: str, why: str | None) -> None:
    assert read_listed_table({"query": sql}, ["hr.salaries", "payroll"]) == why


def test_a_call_without_sql_text_is_caught() -> None:
    assert read_listed_table({"template": "summary"}, ["payroll"]) == (
        "its SQL cannot be read (no query argument)"
    )


def _turn(*calls: tuple[str, dict[str, Any]]) -> ModelTurn:
    return ModelTurn(
        content=None,
        tool_calls=[
            ToolCallRequest(id=f"t{i}", name=name, arguments_text=json.dumps(arguments))
            for i, (name, arguments) in enumerate(calls)
        ],
    )


RULES = ApprovalRules(
    [
        ToolConfig.model_validate(
            {
                "name": "web_search",
                "type": "web_search",
                "approval": {"required": "onMatch", "match": {"toolOutput": True}},
            }
        ),
        ToolConfig.model_validate({"name": "vector_search", "type": "vector_search"}),
    ]
)
LEAK = ("web_search", {"query": "47 contracts market share"})
SAFE = ("web_search", {"query": "EU procurement rules"})
LOCAL = ("vector_search", {"query": "47 contracts"})


def _record(decision: str, calls: list[PendingCall]) -> ApprovalRecord:
    return ApprovalRecord.model_validate(
        {
            "id": "apr_1",
            "calls": [c.model_dump() for c in calls],
            "decision": decision,
            "by": "portal",
            "requestedAt": "t0",
            "decidedAt": "t1",
            "waitedMs": 5.0,
        }
    )


def test_the_gate_pauses_only_the_calls_the_rules_catch() -> None:
    trace = Trace(question=QUESTION, model="m")
    screen = TurnGate(RULES).screen(_turn(LEAK, SAFE, LOCAL), MESSAGES, trace)
    assert [c.id for c in screen.waiting] == ["t0"]
    assert screen.refused == {}
    assert TurnGate(RULES).screen(_turn(SAFE, LOCAL), MESSAGES, trace).waiting == ()


def test_decisions_run_or_refuse_and_a_refused_call_is_not_asked_twice() -> None:
    trace = Trace(question=QUESTION, model="m")
    (waiting,) = TurnGate(RULES).screen(_turn(LEAK), MESSAGES, trace).waiting
    approved = _record("approved", [waiting])
    assert TurnGate(RULES, {"t0": approved}).screen(_turn(LEAK), MESSAGES, trace).refused == {}
    rejected = _record("rejected", [waiting])
    screen = TurnGate(RULES, {"t0": rejected}).screen(_turn(LEAK), MESSAGES, trace)
    assert screen.refused["t0"].decision is rejected
    trace.approvals.append(rejected)
    again = TurnGate(RULES).screen(_turn(LEAK), MESSAGES, trace)  # the model asks once more
    assert again.waiting == ()
    assert again.refused["t0"].decision is rejected


def test_a_run_that_cannot_wait_refuses_at_once_and_records_it() -> None:
    trace = Trace(question=QUESTION, model="m")
    gate = TurnGate(RULES, cannot_wait="caller batch holds no approve grant")
    screen = gate.screen(_turn(LEAK, SAFE), MESSAGES, trace)
    assert screen.waiting == ()
    assert list(screen.refused) == ["t0"]
    (record,) = trace.approvals
    assert (record.decision, record.reason) == ("refused", "caller batch holds no approve grant")


@pytest.mark.parametrize(
    ("text", "choice", "reason"),
    [
        ("approve apr_0123456789abcdef0123", "approve", ""),
        ("Reject apr_0123456789abcdef0123: no figures out", "reject", "no figures out"),
        ("approve the budget apr_0123456789abcdef0123", None, None),
        ("What was approved in 2025?", None, None),
    ],
)
def test_an_addressed_decision_is_recognised_and_a_question_is_not(
    text: str, choice: str | None, reason: str | None
) -> None:
    reply = parse_addressed(text)
    if choice is None:
        assert reply is None
        return
    assert reply is not None
    assert (reply.choice, reply.reason) == (choice, reason)
    assert reply.approval_id == "apr_0123456789abcdef0123"


def test_a_reply_in_the_task_is_text_or_data() -> None:
    assert parse_reply("approve") is not None
    reply = parse_reply("reject - too sensitive")
    assert reply is not None
    assert (reply.choice, reply.reason) == ("reject", "too sensitive")
    data = parse_reply("", [{"decision": "reject", "reason": "no"}])
    assert data is not None
    assert (data.choice, data.reason) == ("reject", "no")
    assert parse_reply("maybe later") is None
