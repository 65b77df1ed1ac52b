"""The default descriptions of the three tools: what the model reads when it chooses one.

Each description states positive use cases *and* explicit "NOT for" exclusions; both cut the
semantic overlap between tools, which is what tool selection accuracy measures. A ToolBinding
may override a description (``spec.description``); these are the defaults, and the evals' tool
selection sets are scored against them.

Import the specs by name (``VECTOR_SEARCH``, ``SQL_QUERY``, ``WEB_SEARCH``) or look them up with
:func:`default_spec`. :func:`with_description` applies an override without touching the schema.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Final


@dataclass(frozen=True)
class ToolSpec:
    """What the model sees: a function name, a description and a JSON Schema for arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The ``tools[]`` entry of an OpenAI-compatible chat completions request."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    @classmethod
    def from_openai(cls, entry: dict[str, Any]) -> ToolSpec:
        """The spec of a ``tools[]`` entry (the inverse of :meth:`to_openai`)."""
        function = entry["function"]
        return cls(
            name=function["name"],
            description=function.get("description", ""),
            parameters=function.get("parameters", {"type": "object"}),
        )


VECTOR_SEARCH_NAME: Final = "vector_search"
SQL_QUERY_NAME: Final = "sql_query"
WEB_SEARCH_NAME: Final = "web_search"

VECTOR_SEARCH: Final = ToolSpec(
    name=VECTOR_SEARCH_NAME,
    description=(
        "Search internal company documents (contracts, clauses, policies, procedures, manuals) "
        "by meaning. Use when the question needs unstructured text: what a document says, "
        "contract clauses and special conditions, explanations, procedures, examples. Returns "
        "the most similar passages with their document id and source, for citation. "
        "NOT for counts, sums, totals, averages or exact filters on amounts, dates or regions "
        "(use sql_query). NOT for public or real-time information such as news or current "
        "prices (use web_search)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "Natural-language search query describing the content sought.",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "default": 5,
                "description": "How many passages to return (1-20, default 5).",
            },
            "filters": {
                "type": "object",
                "description": (
                    "Optional exact-match filters on document metadata, e.g. "
                    '{"provider": "Provider A"}. Keys are metadata fields, values strings, '
                    "numbers or booleans."
                ),
                "additionalProperties": {"type": ["string", "number", "integer", "boolean"]},
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

SQL_QUERY: Final = ToolSpec(
    name=SQL_QUERY_NAME,
    description=(
        "Query the SQL database (PostgreSQL) for structured records: metrics, counts, sums, "
        "totals, averages, aggregations, financial figures and exact filters on amounts, dates, "
        "years or regions. Use when the answer is an exact number or a list of rows. Write one "
        "read-only SELECT (WITH and UNION allowed) over the allowed tables only, with $1, $2, "
        "... placeholders for every literal value and the values in params. "
        "NOT for finding what documents or contract clauses say (use vector_search). NOT for "
        "public or real-time information (use web_search). NOT for changing data: anything "
        "other than a single SELECT is refused."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": (
                    "One parameterised SELECT statement using $1, $2, ... placeholders, e.g. "
                    "SELECT COUNT(*) FROM contracts WHERE amount > $1 AND year = $2"
                ),
            },
            "params": {
                "type": "array",
                "items": {"type": ["string", "number", "integer", "boolean", "null"]},
                "default": [],
                "description": "Values for the placeholders, in order ($1 first).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

WEB_SEARCH: Final = ToolSpec(
    name=WEB_SEARCH_NAME,
    description=(
        "Search the public web for real-time information: recent news, current prices, public "
        "facts about third parties that internal sources cannot hold. Returns title, URL and "
        "snippet per result. Use only when the data is public and not covered by internal "
        "sources. NOT for internal documents, contracts or policies (use vector_search). NOT "
        "for internal figures, counts or totals (use sql_query). NOT for anything confidential: "
        "the query leaves the company."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "Web search query; never include confidential data.",
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": 10,
                "default": 5,
                "description": "How many results to return (1-10, default 5).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

DEFAULT_SPECS: Final = MappingProxyType(
    {spec.name: spec for spec in (VECTOR_SEARCH, SQL_QUERY, WEB_SEARCH)}
)
"""Tool name → default :class:`ToolSpec`, read-only."""


def default_spec(name: str) -> ToolSpec:
    """The default spec of tool ``name``; ``KeyError`` naming the known tools otherwise."""
    try:
        return DEFAULT_SPECS[name]
    except KeyError:
        known = ", ".join(sorted(DEFAULT_SPECS))
        raise KeyError(f"unknown tool {name!r}; known tools: {known}") from None


def default_description(name: str) -> str:
    """The default description of tool ``name`` (what a ToolBinding shows when not overridden)."""
    return default_spec(name).description


def with_description(spec: ToolSpec, description: str | None) -> ToolSpec:
    """``spec`` with its description replaced, unless ``description`` is empty or None."""
    if description is None or not description.strip():
        return spec
    return replace(spec, description=description.strip())


def bound_spec(spec: ToolSpec, name: str, description: str | None) -> ToolSpec:
    """``spec`` under the function name a binding gives the tool, with its description override
    (:func:`with_description`)."""
    return replace(with_description(spec, description), name=name)


def sql_description_for(tables: tuple[str, ...] | list[str], base: str | None = None) -> str:
    """The sql_query description completed with the allowlisted table names the model may use."""
    text = SQL_QUERY.description if base is None else base
    if not tables:
        return text
    return f"{text} Allowed tables: {', '.join(tables)}."
