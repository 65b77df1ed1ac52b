"""The approval tests' agent: sql_query, then a web_search that quotes the SQL result (so the
``toolOutput`` rule pauses it), then the answer; callers with and without the approve grant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sleuth.scripted import Match, Rule, Scenario, ScriptedResponse, ScriptedToolCall
from tests.agent.access_kit import key_directory, new_key
from tests.agent.agent_doubles import SEED_QUESTION, SEED_SQL, FakeTool, seed_sql_factory

# "47" is what sql_query returns (num_contratos); the question does not hold it.
WEB_QUERY = {"query": "EU providers 47 contracts 2025 market comparison"}
WEB_RESULT = "Market reports count about 300 such contracts in the EU in 2025."
ANSWER_WITH_WEB = "You signed 47 contracts; the market counted about 300 (web)."
ANSWER_WITHOUT_WEB = (
    "You signed 47 contracts. I could not compare with the market: the search was refused."
)
QUESTION = SEED_QUESTION

KEYS = {name: new_key() for name in ("portal", "other", "batch")}
GRANTS = {"portal": ["approve", "trace"], "other": ["approve"], "batch": ["trace"]}


def web_factory(config: object) -> FakeTool:
    """``tests.agent.approval_kit:web_factory``: a web_search double."""
    return FakeTool("web_search", {"results": [{"title": "EU market", "snippet": WEB_RESULT}]})


def scenario() -> Scenario:
    return Scenario(
        turns=[
            ScriptedResponse(tool_calls=[ScriptedToolCall(name="sql_query", arguments=SEED_SQL)]),
            ScriptedResponse(tool_calls=[ScriptedToolCall(name="web_search", arguments=WEB_QUERY)]),
            ScriptedResponse(content=ANSWER_WITH_WEB),
        ],
        rules=[
            Rule(
                match=Match(position=2, last_message_contains="was not run"),
                response=ScriptedResponse(content=ANSWER_WITHOUT_WEB),
            )
        ],
    )


def approval_config(
    model_url: str, keys: Path, timeout_s: int = 60, **extra: Any
) -> dict[str, Any]:
    """``sleuth agent``'s configuration: the two tools, web_search under approval, three
    callers with API keys (portal and other may approve, batch may not)."""
    for name, key in KEYS.items():
        key_directory(keys, name, key)
    approval = {"required": "onMatch", "match": {"toolOutput": True}, "timeoutSeconds": timeout_s}
    return {
        "model": {"endpoint": model_url, "servedModelName": "scripted"},
        "planner": {"fallbackToRouter": False},
        "tools": [
            {
                "name": "sql_query",
                "type": "custom",
                "factory": f"{seed_sql_factory.__module__}:seed_sql_factory",
            },
            {
                "name": "web_search",
                "type": "custom",
                "factory": f"{__name__}:web_factory",
                "approval": approval,
            },
        ],
        "access": {
            "callers": [
                {"name": n, "apiKeyDirectory": str(keys / n), "grants": GRANTS[n]} for n in KEYS
            ],
            "keyReloadSeconds": 1,
        },
        **extra,
    }


def bearer(caller: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[caller]}"}
