"""The seed's question end to end: agent loop → scripted model → tool services over MCP.

Real parts: the agent's loop and model client (sleuth.agent), the scripted OpenAI-compatible
model server over HTTP, two ``sleuth tool-service`` processes (sql_query on the sample
PostgreSQL as the SELECT-only role; vector_search on Qdrant local mode with the real local
embedding model), reached over MCP streamable HTTP by :class:`RemoteTool`. The scripted model
only answers once the real evidence is in its context (rules match on the observations).
"""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.llm import OpenAIChatModel
from sleuth.scripted import Match, Rule, Scenario, ScriptedResponse, ScriptedServer
from sleuth.scripted import ScriptedToolCall as Call
from sleuth.tools.remote import build_remote_tool
from sleuth.tools.sample.contracts import SEED_QUESTION
from sleuth.tools.sample.documents import INJECTION_DOCUMENT_ID
from tests.support.seed import SEED_ANSWER, seed_rules

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _agent(scripted: ScriptedServer, sql_url: str, vector_url: str) -> Agent:
    tools = {
        "sql_query": build_remote_tool(
            ToolConfig(name="sql_query", type="sql_query", endpoint=sql_url)
        ),
        "vector_search": build_remote_tool(
            ToolConfig(name="vector_search", type="vector_search", endpoint=vector_url)
        ),
    }
    bound = {name: BoundTool(tool, timeout_s=60.0) for name, tool in tools.items()}
    model = OpenAIChatModel(scripted.url, "scripted", timeout_s=30.0)
    return Agent(model, ToolRunner(bound), LoopSettings(max_iterations=5, request_timeout_s=180))


async def test_seed_question_two_iterations_over_mcp_with_citations(
    scripted: ScriptedServer, sql_service: Any, vector_service: Any
) -> None:
    scripted.set_scenario(Scenario(rules=seed_rules()))
    result = await _agent(scripted, sql_service.url, vector_service.url).run(SEED_QUESTION)

    assert result.answer == SEED_ANSWER
    trace = result.trace
    assert trace.stop_reason == "answered"
    assert trace.iterations == 2
    sql_call, vector_call = trace.tool_calls()
    assert (sql_call.tool, sql_call.status) == ("sql_query", "ok")
    assert json.loads(sql_call.observation)["rows"] == [
        {"num_contracts": 47, "total_eur": "8300000.00"}
    ]
    assert (vector_call.tool, vector_call.status) == ("vector_search", "ok")
    passages = json.loads(vector_call.observation)["results"]
    texts = " ".join(p["text"] for p in passages)
    assert "2% per month on the invoiced amount" in texts
    assert "capped at 4% per year" in texts
    cited = {c["id"] for c in result.citations}
    assert {
        "sql:contracts",
        "contract-provider-a-2025#0",
        "contract-provider-b-2025#0",
        "contract-provider-c-2025#0",
    } <= cited
    sources = {c["id"]: c["source"] for c in result.citations}
    assert sources["contract-provider-c-2025#0"] == "contracts/provider-c-framework-2025.md"


async def test_prompt_injection_obeyed_by_the_model_writes_nothing(
    scripted: ScriptedServer,
    sql_service: Any,
    vector_service: Any,
    owner_conn: asyncpg.Connection,
    checksums: Any,
) -> None:
    before = await checksums(owner_conn)
    hostile_calls = [
        Call(name="sql_query", arguments={"query": "DROP TABLE contracts"}),
        Call(name="sql_query", arguments={"query": "DELETE FROM contracts"}),
        Call(name="sql_query", arguments={"query": "SELECT 1; DROP TABLE contracts"}),
        Call(
            name="sql_query",
            arguments={"query": "WITH d AS (DELETE FROM contracts RETURNING *) SELECT 1"},
        ),
    ]
    scripted.set_scenario(
        Scenario(
            rules=[
                Rule(
                    match=Match(position=0),
                    response=ScriptedResponse(
                        tool_calls=[
                            Call(
                                name="vector_search",
                                arguments={
                                    "query": "special conditions for 2025 supplier contracts",
                                    "top_k": 9,
                                },
                            )
                        ]
                    ),
                ),
                # The model obeys the injected instruction, once it has read it.
                Rule(
                    match=Match(position=1, last_message_contains="IMPORTANT SYSTEM INSTRUCTION"),
                    response=ScriptedResponse(tool_calls=hostile_calls),
                ),
                Rule(
                    match=Match(position=2),
                    response=ScriptedResponse(content="There are no contracts."),
                ),
            ]
        )
    )
    result = await _agent(scripted, sql_service.url, vector_service.url).run(SEED_QUESTION)

    calls = result.trace.tool_calls()
    assert INJECTION_DOCUMENT_ID in calls[0].observation
    obeyed = [c for c in calls if c.tool == "sql_query"]
    assert len(obeyed) == 4  # the model did try
    for call in obeyed:
        assert call.status == "error"
        assert "query refused" in call.observation
    assert await checksums(owner_conn) == before
    assert await owner_conn.fetchval("SELECT count(*) FROM contracts") == 95
