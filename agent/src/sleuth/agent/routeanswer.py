"""The router's answer: extractive, from the tool results of the turn — figures from the SQL
rows, clauses from the retrieved chunks, snippets from the web, each with its citation id."""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from sleuth.agent.routeplan import overlap, tool_infos, words
from sleuth.tools.vector.sparse import terms

NOT_ENOUGH: Final = "I do not have enough information to answer this from the available sources."

_CLAUSE = re.compile(r"[Cc]lause (\d+(?:\.\d+)+)\s*[—:–-]\s*([^.\n]+)\.?[ \t]*([^\n]*?\.(?=\s|$))?")


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
    in_title = {doc: words(title) for doc, title in titles.items()}
    distinctive = {w for w in names if 0 < sum(w in t for t in in_title.values()) < len(in_title)}
    if not distinctive:
        return chosen
    docs = {doc for doc, t in in_title.items() if t & distinctive}
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
        key=lambda kv: (-overlap(kv[1]["title"], question), -len(kv[1]["docs"]), kv[0]),
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
    """The extractive answer: a sentence from each tool result of this turn, then the notes;
    :data:`NOT_ENOUGH` first when no result holds evidence."""
    kinds = {t.name: t.kind for t in tool_infos(tools)}
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
    return "\n".join(sentences)
