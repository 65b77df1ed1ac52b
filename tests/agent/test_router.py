"""The router plans like the seed article's rules of thumb and answers extractively."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sleuth.agent.routeanswer import NOT_ENOUGH
from sleuth.agent.routeplan import plan
from sleuth.agent.router import ROUTER_NAME, RouterModel
from sleuth.core.tools import DEFAULT_SPECS

pytestmark = pytest.mark.unit

SEED = (
    "How many contracts above 100k€ did we sign in 2025 with EU providers, "
    "and which special conditions recur?"
)
TEMPLATE = {
    "type": "function",
    "function": {
        "name": "contracts_summary",
        "description": "SQL: count and total amount of contracts above an amount, in a year, "
        "for a provider region. NOT for clause text.",
        "parameters": {
            "type": "object",
            "properties": {
                "min_amount": {"type": "number"},
                "year": {"type": "integer"},
                "region": {"type": "string", "enum": ["EU", "NA", "UK", "APAC"]},
            },
            "required": ["min_amount", "year", "region"],
            "additionalProperties": False,
        },
    },
}


def _tools(*names: str) -> list[dict[str, Any]]:
    specs = {name: spec.to_openai() for name, spec in DEFAULT_SPECS.items()}
    return [TEMPLATE, *(specs[n] for n in names)]


def test_seed_question_is_sql_first_then_documents() -> None:
    p = plan(SEED, _tools("vector_search", "sql_query"))
    assert p.rounds == [
        [("contracts_summary", {"min_amount": 100000.0, "year": 2025, "region": "EU"})],
        [("vector_search", {"query": SEED, "top_k": 5})],
    ]


def test_document_and_web_questions_run_in_one_parallel_round() -> None:
    q = "What is the price of copper today and what does our price revision clause say?"
    p = plan(q, _tools("vector_search", "web_search"))
    assert [name for name, _ in p.rounds[0]] == ["vector_search", "web_search"]
    assert len(p.rounds) == 1


def test_web_question_without_web_tool_says_real_time_data_is_unavailable() -> None:
    p = plan("What is the price of copper today?", _tools("vector_search"))
    assert p.rounds == []
    assert any("not available" in n for n in p.notes)


def test_unrelated_question_gets_not_enough_information() -> None:
    async def run() -> str:
        messages = [{"role": "user", "content": "Who painted the Mona Lisa?"}]
        turn = await RouterModel().complete(messages, _tools("vector_search"))
        assert not turn.tool_calls
        return turn.content or ""

    answer = asyncio.run(run())
    assert answer.startswith(NOT_ENOUGH)
    assert ROUTER_NAME in answer


async def test_router_composes_the_seed_answer_from_observations() -> None:
    model = RouterModel()
    tools = _tools("vector_search", "sql_query")
    messages: list[dict[str, Any]] = [{"role": "user", "content": SEED}]
    turn = await model.complete(messages, tools)
    assert "named query contracts_summary" in (turn.content or "")
    messages.append(turn.assistant_message())
    rows = {"rows": [{"num_contracts": 47, "total_eur": "8300000.00"}], "truncated": False}
    messages.append(
        {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": json.dumps(rows)}
    )
    turn = await model.complete(messages, tools)
    assert turn.tool_calls[0].name == "vector_search"
    messages.append(turn.assistant_message())
    chunks = {
        "results": [
            {
                "id": "a#1",
                "document_id": "a",
                "title": "Provider A contract",
                "text": "Clause 8.3 — Late-delivery penalty. 2% per month on the invoiced amount.",
            },
            {
                "id": "c#1",
                "document_id": "c",
                "title": "Provider C contract",
                "text": "Clause 7.1 — Price revision. Linked to the euro area CPI, capped at 4%.",
            },
            {
                "id": "b#1",
                "document_id": "b",
                "title": "Provider B contract",
                "text": "Clause 8.3 — Late-delivery penalty. Late deliveries incur 2% per month.",
            },
        ]
    }
    messages.append(
        {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": json.dumps(chunks)}
    )
    final = await model.complete(messages, tools)
    answer = final.content or ""
    assert "num_contracts = 47" in answer
    assert "8.3 M€" in answer
    assert (
        "clause 8.3 — Late-delivery penalty: 2% per month on the invoiced amount. "
        "(recurs in Provider A contract, Provider B contract) [a#1][b#1]" in answer
    )
    assert (
        "clause 7.1 — Price revision: Linked to the euro area CPI, capped at 4%. "
        "(appears in Provider C contract) [c#1]"
    ) in answer
    assert answer.index("clause 8.3") < answer.index("clause 7.1")


def _chunk(doc: str, provider: str, clause: str) -> dict[str, Any]:
    return {
        "id": f"{doc}#1",
        "document_id": doc,
        "title": f"{provider} framework supply agreement 2025",
        "text": clause,
    }


LATE = "Clause 8.3 — Late-delivery penalty. 2% per month of delay on the invoiced amount."
RETRIEVED = {
    "results": [
        _chunk("b", "Provider B", LATE),
        _chunk("a", "Provider A", LATE),
        _chunk("e", "Provider E", "Clause 11.1 — Confidentiality. Five years after the end."),
        _chunk("d", "Provider D", "Clause 9.2 — Limitation of liability. Twelve months of fees."),
    ]
}


async def _answer(question: str, results: dict[str, Any]) -> str:
    model = RouterModel()
    tools = _tools("vector_search")
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    turn = await model.complete(messages, tools)
    assert turn.tool_calls[0].name == "vector_search"
    messages.append(turn.assistant_message())
    messages.append(
        {"role": "tool", "tool_call_id": turn.tool_calls[0].id, "content": json.dumps(results)}
    )
    return (await model.complete(messages, tools)).content or ""


async def test_a_question_about_one_clause_of_one_provider_cites_only_that() -> None:
    answer = await _answer(
        "What late-delivery penalty applies in the contract with Provider B?", RETRIEVED
    )
    assert "clause 8.3 — Late-delivery penalty" in answer
    assert "(appears in Provider B framework supply agreement 2025) [b#1]" in answer
    for other in ("11.1", "9.2", "[a#1]", "Provider A", "[e#1]", "[d#1]"):
        assert other not in answer


async def test_a_clause_question_without_a_provider_cites_every_contract_having_it() -> None:
    answer = await _answer("Which contracts have a late-delivery penalty clause?", RETRIEVED)
    assert "[b#1][a#1]" in answer
    assert "11.1" not in answer
    assert "9.2" not in answer
