"""The router: a deterministic planner that needs no language model, and says so.

It implements :class:`~sleuth.core.llm.ChatModel`, so the ReAct loop, the tools, the trace and
the metrics are exactly the ones a real model drives. It is the planner of ``sleuth demo`` when no
model server is configured, and the agent's degraded mode when its model server is down.

Planning follows the seed article's rules of thumb:

* "how many", "sum", "total", "more than X", "in year Y" → SQL, through a *named template* whose
  parameters are filled from numbers, years and enum values found in the question (the router
  never writes SQL of its own);
* clauses, conditions, policies, procedures, documents → ``vector_search``;
* current prices, today, latest news → ``web_search``, only when the agent offers it.

SQL runs first, because its answer can sharpen the rest (as in the article's trace); the other
tools then run together in one parallel round. The answer is extractive: figures from the SQL rows,
clauses from the retrieved chunks, snippets from the web, each with its citation id. A question
about a clause ("What late-delivery penalty applies …") cites that clause only, from the
documents the question names ("… with Provider B"); otherwise the clauses that recur (not in
every contract: that is boilerplate). The tool's relevance cut-off (``scoreThreshold``) applies
to the router's calls as to a model's.
"""

from __future__ import annotations

import json
from typing import Any, Final

from sleuth.agent.routeanswer import compose
from sleuth.agent.routeplan import plan, tool_infos
from sleuth.core.guided import ToolCalling
from sleuth.core.llm import ModelTurn, ToolCallRequest

ROUTER_NAME: Final = "router (deterministic planner, no LLM)"
ROUTER_ID = "router_"


def _gathered(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> set[str]:
    """Names and kinds of the tools that already answered in this conversation through calls
    the router did not make (a model's, before its server failed)."""
    kinds = {t.name: t.kind for t in tool_infos(tools)}
    start = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    theirs: dict[str, str] = {}  # call id → tool name
    done: set[str] = set()
    for m in messages[start + 1 :]:
        for call in m.get("tool_calls") or []:
            if not str(call.get("id", "")).startswith(ROUTER_ID):
                theirs[call.get("id", "")] = call.get("function", {}).get("name", "")
        name = theirs.get(m.get("tool_call_id", "")) if m.get("role") == "tool" else None
        if name is None:
            continue
        try:
            content = json.loads(m.get("content") or "null")
        except ValueError:
            continue
        if isinstance(content, dict) and "error" not in content:
            done |= {name, kinds.get(name, "other")}
    return done


class RouterModel:
    """A :class:`~sleuth.core.llm.ChatModel` that plans with rules instead of a model.

    It may take over a conversation a model started (the agent's degraded mode): tools that
    already answered there are not called again, and their results are part of the answer.
    """

    name = ROUTER_NAME
    tool_calling: ToolCalling | None = None  # plans with rules: no model, no tool-call format

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn:
        question = next(
            (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
        )
        the_plan = plan(str(question), tools)
        done = _gathered(messages, tools)
        rounds: list[tuple[list[tuple[str, dict[str, Any]]], str | None]] = []
        for i, planned in enumerate(the_plan.rounds):
            left = [(name, args) for name, args in planned if name not in done]
            if left:
                rounds.append((left, the_plan.thoughts[i] if i < len(the_plan.thoughts) else None))
        notes = the_plan.notes
        if done & {"sql_free", "sql_template"}:  # the SQL evidence is there already
            notes = [n for n in notes if "SQL database" not in n]
        start = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        rounds_done = sum(
            1
            for m in messages[start + 1 :]
            if any(str(c.get("id", "")).startswith(ROUTER_ID) for c in m.get("tool_calls") or [])
        )
        if rounds_done < len(rounds):
            planned, thought = rounds[rounds_done]
            calls = tuple(
                ToolCallRequest(
                    id=f"{ROUTER_ID}{rounds_done + 1}_{i + 1}",
                    name=name,
                    arguments_text=json.dumps(args),
                )
                for i, (name, args) in enumerate(planned)
            )
            return ModelTurn(content=thought, tool_calls=calls, finish_reason="tool_calls")
        answer = compose(str(question), messages, tools, notes)
        answer += f"\n(Answered by the {ROUTER_NAME}.)"
        return ModelTurn(content=answer, finish_reason="stop", extra={"planner": "router"})
