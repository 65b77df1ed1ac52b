"""The router's plan: which of the offered tools to call for a question, in which rounds, with
which arguments (the rules of thumb in :mod:`sleuth.agent.router`'s docstring). Named SQL
templates are filled from the numbers, years and enum values found in the question."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

_SQL_WORDS = re.compile(
    r"\b(how many|how much|number of|count|sum|total|average|mean|more than|less than|fewer than"
    r"|above|below|over|under|at least|in (19|20)\d\d|per (year|month)|top \d+)\b",
    re.IGNORECASE,
)
_DOC_WORDS = re.compile(
    r"\b(clauses?|conditions?|terms?|polic(y|ies)|procedures?|says?|explain|describe|documents?"
    r"|contract text|penalt(y|ies)|provisions?|why|what does|recur\w*)\b",
    re.IGNORECASE,
)
_WEB_WORDS = re.compile(
    r"\b(today|current(ly)?|right now|latest|news|this week|price of|stock|exchange rate"
    r"|weather)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_AMOUNT = re.compile(
    r"(?<![\w.])(\d+(?:[.,]\d+)*)\s*(k|m|thousand|million)?\s*(?:€|eur|euros?|\$|usd)?(?!\w)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool the agent offers, as the router reads it."""

    name: str
    description: str
    parameters: dict[str, Any]

    @property
    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties", {})
        return props if isinstance(props, dict) else {}

    @property
    def kind(self) -> str:
        """vector | web | sql_free | sql_template | other, from the name and the description."""
        name, text = self.name.lower(), self.description.lower()
        if "query" in self.properties and "params" in self.properties:
            return "sql_free"
        for kind, needle in (("vector", "vector"), ("web", "web"), ("sql_template", "sql")):
            if needle in name:
                return kind
        if self.properties and "query" not in self.properties:
            return "sql_template"  # named query templates take typed values, never a query
        # A renamed tool: judge by what its description says it searches first.
        firsts = {
            "vector": text.find("document"),
            "web": text.find("public web"),
            "sql_template": min(
                (i for i in (text.find("sql"), text.find("database")) if i >= 0), default=-1
            ),
        }
        found = {k: i for k, i in firsts.items() if i >= 0}
        return min(found, key=lambda k: found[k]) if found else "other"


@dataclass(slots=True)
class Plan:
    """The calls the router makes, round by round, what it says before each round, and the
    notes its answer ends with."""

    rounds: list[list[tuple[str, dict[str, Any]]]] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def tool_infos(tools: list[dict[str, Any]]) -> list[ToolInfo]:
    """The tools of a chat request (OpenAI ``tools``), as the router reads them."""
    out = []
    for entry in tools:
        fn = entry.get("function", {})
        out.append(
            ToolInfo(fn.get("name", ""), fn.get("description", ""), fn.get("parameters", {}))
        )
    return out


def _amounts(question: str) -> list[Decimal]:
    """Money-like numbers (100k€, 1.5M, 250,000) — years excluded."""
    found = []
    for match in _AMOUNT.finditer(question):
        digits, scale = match.group(1), (match.group(2) or "").lower()
        if _YEAR.fullmatch(digits) and not scale:
            continue
        try:
            value = Decimal(digits.replace(",", ""))
        except InvalidOperation:
            continue
        value *= {"k": 1000, "thousand": 1000, "m": 1_000_000, "million": 1_000_000}.get(scale, 1)
        found.append(value)
    return found


def _fill(tool: ToolInfo, question: str) -> dict[str, Any] | None:
    """Arguments for a template from the question, or None when a parameter stays unknown."""
    years = [int(y) for y in _YEAR.findall(question)]
    amounts = _amounts(question)
    args: dict[str, Any] = {}
    for name, schema in tool.properties.items():
        kind = schema.get("type")
        enum = schema.get("enum")
        if enum:
            hit = next(
                (v for v in enum if re.search(rf"\b{re.escape(str(v))}\b", question, re.I)), None
            )
            if hit is None:
                return None
            args[name] = hit
        elif kind == "integer" and "year" in name and years:
            args[name] = years[0]
        elif kind in ("integer", "number") and amounts:
            value = amounts.pop(0)
            args[name] = int(value) if kind == "integer" else float(value)
        elif schema.get("format") == "date":
            match = re.search(r"\b\d{4}-\d{2}-\d{2}\b", question)
            if not match:
                return None
            args[name] = match.group(0)
        else:
            return None
    return args


def words(text: str) -> set[str]:
    """The lowercase words and numbers of ``text``."""
    return set(_WORD.findall(text.lower()))


def overlap(text: str, question: str) -> int:
    """How many words ``text`` shares with ``question``."""
    return len(words(text) & words(question))


def plan(question: str, tools: list[dict[str, Any]]) -> Plan:
    """Which tools to call, in which rounds, with which arguments."""
    infos = tool_infos(tools)
    result = Plan()
    first: list[tuple[str, dict[str, Any]]] = []
    later: list[tuple[str, dict[str, Any]]] = []
    if _SQL_WORDS.search(question):
        templates = [t for t in infos if t.kind == "sql_template"]
        filled = [(t, a) for t in templates if (a := _fill(t, question)) is not None]
        if filled:
            tool, args = max(filled, key=lambda ta: overlap(ta[0].description, question))
            first.append((tool.name, args))
            result.thoughts.append(
                "The question asks for counts or sums with exact filters: that is the SQL "
                f"database, through the named query {tool.name} with values taken from the "
                "question."
            )
        elif any(t.kind == "sql_free" for t in infos):
            result.notes.append(
                "The question needs the SQL database, but no named query template matches it and "
                "the router does not write free-form SQL; point sleuth at a model server for that."
            )
    if _DOC_WORDS.search(question):
        for tool in infos:
            if tool.kind == "vector":
                later.append((tool.name, {"query": question, "top_k": 5}))
                result.thoughts.append(
                    "It asks about clauses, conditions or documents: that lives in free text, "
                    "so the document search."
                )
                break
    if _WEB_WORDS.search(question):
        web = [t for t in infos if t.kind == "web"]
        if web:
            later.append((web[0].name, {"query": question}))
            result.thoughts.append("It needs current public data: the web search.")
        else:
            result.notes.append(
                "Real-time web data is not available to this agent (web_search is not enabled)."
            )
    result.rounds = [r for r in (first, later) if r]
    if first and later:
        result.thoughts = [result.thoughts[0], " ".join(result.thoughts[1:])]
    elif later:
        result.thoughts = [" ".join(result.thoughts)]
    return result
