"""The default tool descriptions: positive use cases, explicit exclusions, valid schemas."""

from __future__ import annotations

import pytest

from sleuth.core.tools import (
    DEFAULT_SPECS,
    SQL_QUERY,
    VECTOR_SEARCH,
    WEB_SEARCH,
    bound_spec,
    default_spec,
    sql_description_for,
    with_description,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("spec", [VECTOR_SEARCH, SQL_QUERY, WEB_SEARCH], ids=lambda s: s.name)
def test_every_description_has_use_cases_and_exclusions(spec: object) -> None:
    from sleuth.core.tools import ToolSpec

    assert isinstance(spec, ToolSpec)
    assert "Use when" in spec.description or "Use only when" in spec.description
    assert spec.description.count("NOT for") >= 2
    others = set(DEFAULT_SPECS) - {spec.name}
    # Each exclusion points the model at the right other tool.
    assert all(f"use {other}" in spec.description for other in others)
    params = spec.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    assert spec.to_openai()["function"]["name"] == spec.name


def test_sql_spec_names_placeholders_and_params() -> None:
    props = SQL_QUERY.parameters["properties"]
    assert "$1" in props["query"]["description"]
    assert props["params"]["type"] == "array"


def test_default_spec_lookup_and_unknown_name() -> None:
    assert default_spec("sql_query") is SQL_QUERY
    with pytest.raises(KeyError, match="known tools: sql_query, vector_search, web_search"):
        default_spec("search_docs")


def test_description_override_keeps_schema() -> None:
    spec = with_description(VECTOR_SEARCH, "  Search the HR handbook. NOT for payroll.  ")
    assert spec.description == "Search the HR handbook. NOT for payroll."
    assert spec.parameters is VECTOR_SEARCH.parameters
    assert with_description(VECTOR_SEARCH, "   ") is VECTOR_SEARCH
    assert with_description(VECTOR_SEARCH, None) is VECTOR_SEARCH


def test_a_bound_spec_takes_the_binding_name_and_override() -> None:
    spec = bound_spec(WEB_SEARCH, "news_search", "Search the news. NOT for contracts.")
    assert (spec.name, spec.description) == ("news_search", "Search the news. NOT for contracts.")
    assert spec.parameters is WEB_SEARCH.parameters
    plain = bound_spec(WEB_SEARCH, "news_search", None)
    assert (plain.name, plain.description) == ("news_search", WEB_SEARCH.description)


def test_sql_description_lists_allowed_tables() -> None:
    text = sql_description_for(["contracts", "providers"])
    assert text.endswith("Allowed tables: contracts, providers.")
    assert sql_description_for([]) == SQL_QUERY.description
