"""In-process tool doubles and the seed's data, shared by the agent's tests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from sleuth.agent.cache import ToolCache
from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.guided import ToolCalling
from sleuth.core.llm import OpenAIChatModel
from sleuth.core.tools import ToolSpec
from sleuth.scripted import ScriptedResponse, ScriptedToolCall
from sleuth.tools.base import Citation, ToolError, ToolOutput

SEED_QUESTION = (
    "How many contracts above 100k€ did we sign in 2025 with EU providers, "
    "and which special conditions recur?"
)
SEED_SQL = {
    "query": "SELECT COUNT(*) AS num_contratos, SUM(amount) AS total_eur FROM contracts "
    "WHERE amount > $1 AND year = $2 AND provider_region = $3",
    "params": [100000, 2025, "EU"],
}
SEED_SEARCH = {
    "query": "EU provider contracts 2025 amount above 100k special conditions recurring clauses",
    "top_k": 5,
}
SEED_CHUNKS = [
    "Provider A contract — clause 8.3: late-delivery penalty of 2% per month on the invoiced "
    "amount",
    "Provider C contract — clause 7.1: price revision linked to the euro area CPI capped at 4% "
    "per year",
    "Provider B contract — clause 8.3: late-delivery penalty of 2% per month",
]
SEED_ANSWER = (
    "In 2025 you signed 47 contracts with EU providers above 100,000 €, for a cumulative total "
    "of 8.3 M€. The special condition that appears most often is the late-delivery penalty "
    "clause (8.3): 2% per month on the invoiced amount."
)


def seed_turns() -> list[ScriptedResponse]:
    """The seed's model turns: sql_query, then vector_search, then the answer."""
    return [
        ScriptedResponse(tool_calls=[ScriptedToolCall(name="sql_query", arguments=SEED_SQL)]),
        ScriptedResponse(
            tool_calls=[ScriptedToolCall(name="vector_search", arguments=SEED_SEARCH)]
        ),
        ScriptedResponse(content=SEED_ANSWER),
    ]


@dataclass
class FakeTool:
    """An in-process tool double: fixed content, optional delay, scripted failures."""

    name: str
    content: Any
    delay_s: float = 0.0
    fail_with: list[ToolError] = field(default_factory=list)
    citations: tuple[Citation, ...] = ()
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name,
            description=f"test double of {self.name}",
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        )

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        self.calls.append(arguments)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail_with:
            raise self.fail_with.pop(0)
        return ToolOutput(content=self.content, citations=self.citations)


def seed_sql() -> FakeTool:
    return FakeTool("sql_query", {"num_contratos": 47, "total_eur": 8300000})


def seed_vector() -> FakeTool:
    citations = tuple(
        Citation(id=f"chunk_{i}", source=f"contract-{p}.pdf", text=t)
        for i, (p, t) in enumerate(zip("ACB", SEED_CHUNKS, strict=True), start=1)
    )
    return FakeTool(
        "vector_search",
        [{"id": f"chunk_{i}", "text": t} for i, t in enumerate(SEED_CHUNKS, start=1)],
        citations=citations,
    )


def make_agent(
    url: str,
    tools: list[FakeTool],
    *,
    max_iterations: int = 5,
    parallel: bool = True,
    timeout_s: float = 5.0,
    cache: ToolCache | None = None,
    stream: bool = True,
    request_timeout_s: float = 30.0,
    model_timeout_s: float = 10.0,
    tool_calling: ToolCalling = "native",
) -> Agent:
    bound = {t.name: BoundTool(t, timeout_s=timeout_s) for t in tools}
    runner = ToolRunner(bound, cache, parallel=parallel)
    model = OpenAIChatModel(
        url, "scripted", stream=stream, timeout_s=model_timeout_s, tool_calling=tool_calling
    )
    settings = LoopSettings(max_iterations=max_iterations, request_timeout_s=request_timeout_s)
    return Agent(model, runner, settings)


def seed_sql_factory(config: object) -> FakeTool:
    """A ``factory`` for the configuration file: ``tests.agent.agent_doubles:seed_sql_factory``."""
    return seed_sql()


def seed_vector_factory(config: object) -> FakeTool:
    """``tests.agent.agent_doubles:seed_vector_factory``: the seed's passages, with citations."""
    return seed_vector()


def slow_vector_factory(config: object) -> FakeTool:
    """``tests.agent.agent_doubles:slow_vector_factory``: the seed's passages after 30 s (a run
    to cancel while its tools work)."""
    tool = seed_vector()
    tool.delay_s = 30.0
    return tool


def seed_tools(vector: str = "seed_vector_factory") -> list[dict[str, str]]:
    """The seed's two tools as configuration entries for ``sleuth agent`` in a process."""
    return [
        {"name": "sql_query", "type": "custom", "factory": f"{__name__}:seed_sql_factory"},
        {"name": "vector_search", "type": "custom", "factory": f"{__name__}:{vector}"},
    ]
