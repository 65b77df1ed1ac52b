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
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from sleuth.core.guided import ToolCalling
from sleuth.core.llm import ModelTurn, ToolCallRequest
from sleuth.tools.vector.sparse import terms

ROUTER_NAME: Final = "router (deterministic planner, no LLM)"
NOT_ENOUGH: Final = "I do not have enough information to answer this from the available sources."

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
_CLAUSE = re.compile(r"[Cc]lause (\d+(?:\.\d+)+)\s*[—:–-]\s*([^.\n]+)\.?[ \t]*([^\n]*?\.(?=\s|$))?")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class _ToolInfo:
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
class _Plan:
    rounds: list[list[tuple[str, dict[str, Any]]]] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _tools(tools: list[dict[str, Any]]) -> list[_ToolInfo]:
    out = []
    for entry in tools:
        fn = entry.get("function", {})
        out.append(
            _ToolInfo(fn.get("name", ""), fn.get("description", ""), fn.get("parameters", {}))
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


def _fill(tool: _ToolInfo, question: str) -> dict[str, Any] | None:
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


def _overlap(text: str, question: str) -> int:
    return len(set(_WORD.findall(text.lower())) & set(_WORD.findall(question.lower())))


def plan(question: str, tools: list[dict[str, Any]]) -> _Plan:
    """Which tools to call, in which rounds, with which arguments."""
    infos = _tools(tools)
    result = _Plan()
    first: list[tuple[str, dict[str, Any]]] = []
    later: list[tuple[str, dict[str, Any]]] = []
    if _SQL_WORDS.search(question):
        templates = [t for t in infos if t.kind == "sql_template"]
        filled = [(t, a) for t in templates if (a := _fill(t, question)) is not None]
        if filled:
            tool, args = max(filled, key=lambda ta: _overlap(ta[0].description, question))
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


# ---- answer composition ---------------------------------------------------------------------


def _money(value: Any, column: str) -> str:
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return str(value)
    euro = "eur" in column.lower() or "amount" in column.lower()
    if euro and abs(number) >= 1_000_000:
        millions = (number / 1_000_000).quantize(Decimal("0.1"))
        return f"{millions} M€ ({number:,.2f} €)"
    if euro:
        return f"{number:,.2f} €"
    return f"{number:,}" if number == number.to_integral_value() else str(number)


def _sql_sentence(tool: str, args: dict[str, Any], content: dict[str, Any]) -> str:
    rows = content.get("rows") or []
    shown = ", ".join(f"{k}={v}" for k, v in args.items())
    if not rows:
        return f"The SQL database ({tool}: {shown}) returned no rows."
    if len(rows) == 1:
        parts = [f"{col} = {_money(val, col)}" for col, val in rows[0].items()]
        return f"From the SQL database ({tool}: {shown}): " + "; ".join(parts) + "."
    more = " (truncated)" if content.get("truncated") else ""
    return f"From the SQL database ({tool}: {shown}): {len(rows)} rows{more}."


def _short(sentence: str, limit: int = 160) -> str:
    sentence = " ".join(sentence.split())
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"


# Words that say "a document or clause" without saying which one.
_GENERIC = frozenset(
    [
        "clause",
        "contract",
        "agreement",
        "provider",
        "supplier",
        "apply",
        "applies",
        "applied",
        "condition",
        "special",
        "term",
        "say",
        "document",
        "recur",
        "recurring",
        "framework",
        "supply",
        "policy",
        "procedure",
        "which",
        "what",
    ]
)


def _topic_terms(text: str) -> set[str]:
    return set(terms(text)) - _GENERIC


def _named_entities(question: str) -> set[str]:
    """Capitalised words and numbers after the first word (Provider B → b, 2025 → 2025)."""
    words = re.findall(r"\b[\w-]+\b", question)[1:]
    found = {w.lower() for w in words if w[:1].isupper() or w.isdigit()}
    return found - _GENERIC - {"eu"}


def _relevant(
    clauses: dict[str, dict[str, Any]], titles: dict[str, str], question: str
) -> dict[str, dict[str, Any]]:
    """The clauses from the documents the question names: capitalised words of the question
    found in some retrieved titles but not all ("Provider B"); all of them when it names none."""
    chosen = clauses
    names = _named_entities(question)
    words = {doc: set(_WORD.findall(title.lower())) for doc, title in titles.items()}
    distinctive = {w for w in names if 0 < sum(w in t for t in words.values()) < len(words)}
    if not distinctive:
        return chosen
    docs = {doc for doc, t in words.items() if t & distinctive}
    narrowed: dict[str, dict[str, Any]] = {}
    for number, c in chosen.items():
        kept = {d: t for d, t in c["docs"].items() if d in docs}
        if kept:
            ids = [i for d, i in c["cites"] if d in docs]
            narrowed[number] = {**c, "docs": kept, "ids": ids}
    return narrowed or chosen


def _doc_sentence(content: dict[str, Any], question: str) -> str:
    results = content.get("results") or []
    if not results:
        return "The document search found nothing relevant."
    clauses: dict[str, dict[str, Any]] = {}
    sources = {
        r.get("document_id") or r.get("source")
        for r in results
        if _CLAUSE.search(r.get("text", ""))
    }
    titles: dict[str, str] = {}
    for r in results:
        doc = r.get("document_id") or r.get("source")
        titles[doc] = r.get("title") or ""
        for number, title, sentence in _CLAUSE.findall(r.get("text", "")):
            entry = clauses.setdefault(
                number,
                {
                    "title": title.strip(),
                    "text": _short(sentence),
                    "docs": {},
                    "ids": [],
                    "cites": [],
                },
            )
            entry["docs"][doc] = r.get("title") or ""
            if r.get("id") not in entry["ids"]:
                entry["ids"].append(r.get("id"))
                entry["cites"].append((doc, r.get("id")))
    asked = {n: c for n, c in clauses.items() if _topic_terms(c["title"]) & _topic_terms(question)}
    if asked:
        # The question names a clause: cite that clause (even where every contract has it) from
        # the documents the question names, and nothing else.
        chosen = _relevant(asked, titles, question)
        header = "From the retrieved contracts"
    else:
        # A clause present in every retrieved contract is boilerplate, not a special condition.
        special = {
            n: c for n, c in clauses.items() if len(sources) <= 2 or len(c["docs"]) < len(sources)
        }
        if not special:
            cited = "; ".join(
                f"{r.get('title') or r.get('source')} [{r.get('id')}]" for r in results
            )
            return f"Relevant documents: {cited}."
        chosen = _relevant(special, titles, question)
        header = "Special conditions in the retrieved contracts"
    # Clauses the question names come first, then the ones that recur most.
    ranked = sorted(
        chosen.items(),
        key=lambda kv: (-_overlap(kv[1]["title"], question), -len(kv[1]["docs"]), kv[0]),
    )
    lines = []
    for number, c in ranked[:4]:
        where = ", ".join(sorted(t for t in c["docs"].values() if t)) or f"{len(c['docs'])} docs"
        cites = "".join(f"[{i}]" for i in c["ids"])
        times = "recurs in" if len(c["docs"]) > 1 else "appears in"
        what = f"{c['title']}: {c['text']}" if c["text"] else c["title"]
        lines.append(f"clause {number} — {what} ({times} {where}) {cites}")
    return f"{header}: " + "; ".join(lines) + "."


def _web_sentence(content: dict[str, Any]) -> str:
    results = content.get("results") or []
    if not results:
        return "The web search returned nothing."
    items = [f"{r.get('title', '')}: {r.get('snippet', '')} <{r.get('url', '')}>" for r in results]
    return "From the public web: " + " | ".join(items[:3])


def _observations(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(tool name, arguments, parsed content) for each tool result after the last user message."""
    start = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for message in messages[start + 1 :]:
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[call.get("id", "")] = (fn.get("name", ""), args)
        if message.get("role") == "tool":
            name, args = calls.get(message.get("tool_call_id", ""), ("", {}))
            try:
                content = json.loads(message.get("content") or "null")
            except ValueError:
                content = message.get("content")
            out.append((name, args, content))
    return out


def compose(
    question: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], notes: list[str]
) -> str:
    kinds = {t.name: t.kind for t in _tools(tools)}
    sentences: list[str] = []
    for name, args, content in _observations(messages):
        if isinstance(content, dict) and "error" in content:
            if kinds.get(name) == "web":
                sentences.append(
                    "Real-time data is not accessible at this moment (web_search failed: "
                    f"{content['error']}); this answer uses internal sources only."
                )
            else:
                sentences.append(f"The {name} tool failed: {content['error']}.")
            continue
        if not isinstance(content, dict):
            continue
        kind = kinds.get(name, "other")
        if kind in ("sql_template", "sql_free"):
            sentences.append(_sql_sentence(name, args, content))
        elif kind == "vector":
            sentences.append(_doc_sentence(content, question))
        elif kind == "web":
            sentences.append(_web_sentence(content))
    sentences.extend(notes)
    evidence = [s for s in sentences if not s.startswith(("The ", "Real-time"))]
    if not evidence:
        sentences.insert(0, NOT_ENOUGH)
    return "\n".join(sentences) + f"\n(Answered by the {ROUTER_NAME}.)"


def _gathered(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> set[str]:
    """Names and kinds of the tools that already answered in this conversation through calls
    the router did not make (a model's, before its server failed)."""
    kinds = {t.name: t.kind for t in _tools(tools)}
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


ROUTER_ID = "router_"


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
        return ModelTurn(content=answer, finish_reason="stop", extra={"planner": "router"})
