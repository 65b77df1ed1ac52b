"""Which tool calls wait for a person: the ``approval`` of each configured tool, applied to a call.

:class:`ApprovalRules` answers, for one call of a model turn and the conversation so far, why the
call needs approval, or None. The rules (:mod:`sleuth.core.api.v1alpha1.approval`):

- ``required: always`` — every call;
- ``match.toolOutput`` — the call's arguments carry a *fragment* of what a tool returned earlier in
  the run (a ``tool`` message) that the user's own messages do not hold. Fragments are numbers of
  two digits or more (digits only: ``8,300,000`` and ``8300000`` are the same) and runs of three
  words (lower-cased). False positives cost a question to a person; a leak costs more;
- ``match.tables`` — the SQL of the call (its ``query`` argument) reads a listed table; SQL that
  cannot be read (none, or not one SELECT) counts as a match: the rule fails closed.

Pure functions of their inputs: no clock, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sleuth.core.api.agent_config import ToolConfig
from sleuth.core.api.v1alpha1.approval import ApprovalSpec
from sleuth.core.llm import ToolCallRequest
from sleuth.core.sql.guard import tables_read

_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d[\d.,]*")
MIN_NUMBER_DIGITS = 2
WORDS_IN_A_ROW = 3


def arguments_of(call: ToolCallRequest) -> dict[str, Any] | None:
    """The call's arguments as a JSON object, or None (the tool runner refuses it as malformed)."""
    try:
        value = json.loads(call.arguments_text) if call.arguments_text.strip() else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _leaves(value: Any) -> Iterator[str]:
    """Every string and number inside an argument value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)


def fragments(text: str) -> set[str]:
    """The numbers (digits only, two or more) and three-word runs of ``text``."""
    found = {
        digits
        for raw in _NUMBER.findall(text)
        if len(digits := re.sub(r"\D", "", raw)) >= MIN_NUMBER_DIGITS
    }
    words = [w.lower() for w in _WORD.findall(text)]
    found.update(
        " ".join(words[i : i + WORDS_IN_A_ROW]) for i in range(len(words) - WORDS_IN_A_ROW + 1)
    )
    return found


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def carried_output(
    arguments: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]
) -> str | None:
    """A fragment of earlier tool output that ``arguments`` carry (and the user never wrote)."""
    said = set().union(*(fragments(_content(m)) for m in messages if m.get("role") == "user"))
    returned = set().union(*(fragments(_content(m)) for m in messages if m.get("role") == "tool"))
    leaked = returned - said
    if not leaked:
        return None
    for leaf in _leaves(dict(arguments)):
        carried = sorted(fragments(leaf) & leaked)
        if carried:
            return carried[0]
    return None


def _listed(table: str, listed: Iterable[str]) -> bool:
    """``table`` as read (``name`` or ``schema.name``) is one of ``listed`` (``public`` is the
    schema of an unqualified name, as for the SQL guard's allowlist)."""
    names = {t.lower() for t in listed}
    if table in names:
        return True
    schema, _, name = table.rpartition(".")
    return (schema == "public" and name in names) or (not schema and f"public.{name}" in names)


def read_listed_table(arguments: Mapping[str, Any], tables: Iterable[str]) -> str | None:
    """Why a SQL call reads one of ``tables``: the table, or the reason its SQL cannot be read."""
    sql = arguments.get("query")
    if not isinstance(sql, str):
        return "its SQL cannot be read (no query argument)"
    read = tables_read(sql)
    if read is None:
        return "its SQL cannot be read"
    hits = sorted(t for t in read if _listed(t, tables))
    return f"it reads table {hits[0]}" if hits else None


def reason_for(
    spec: ApprovalSpec, arguments: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]
) -> str | None:
    """Why a call with ``arguments`` needs approval under ``spec``, or None."""
    if spec.required == "always":
        return "every call of this tool is approved by a person"
    match = spec.match
    if match is None:
        return None
    if match.tool_output:
        carried = carried_output(arguments, messages)
        if carried is not None:
            return f"its arguments carry {carried!r}, which a tool returned earlier in this run"
    if match.tables:
        return read_listed_table(arguments, match.tables)
    return None


class ApprovalRules:
    """The approval settings of the configured tools, by tool name."""

    def __init__(self, tools: Iterable[ToolConfig]) -> None:
        self.specs = {t.name: t.approval for t in tools if t.approval is not None}

    def __bool__(self) -> bool:
        return bool(self.specs)

    def timeout_s(self, tools: Iterable[str]) -> float:
        """How long a pause over calls of ``tools`` may wait: the shortest of their timeouts."""
        timeouts = [self.specs[t].timeout_seconds for t in tools if t in self.specs]
        return float(min(timeouts, default=300))

    def check(
        self, calls: Sequence[ToolCallRequest], messages: Sequence[Mapping[str, Any]]
    ) -> dict[str, str]:
        """The calls of one turn that need approval: call id → why. A call whose arguments are
        no JSON object is left to the tool runner (it refuses it as malformed)."""
        needs: dict[str, str] = {}
        for call in calls:
            spec = self.specs.get(call.name)
            if spec is None:
                continue
            arguments = arguments_of(call)
            if arguments is None:
                continue
            reason = reason_for(spec, arguments, messages)
            if reason is not None:
                needs[call.id] = reason
        return needs


__all__ = [
    "ApprovalRules",
    "arguments_of",
    "carried_output",
    "fragments",
    "read_listed_table",
    "reason_for",
]
