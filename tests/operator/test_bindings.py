"""What a ToolBinding offers its agent: templates the SQL guard accepts, function names no older
binding gives (the guard itself is tested in tests/tools/test_sql_guard.py)."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.operator.bindings import bindings_for, parse_binding
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.reconcile_eval import check_fires

pytestmark = pytest.mark.unit


def _sql(name: str, created: str, *templates: tuple[str, str, int]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {
            "agentRef": {"name": "a"},
            "type": "sql_query",
            "name": name.replace("-", "_"),
            "sqlQuery": {
                "connectionSecretRef": {"name": "db", "key": "uri"},
                "allowedTables": ["contracts"],
                "templates": [
                    {
                        "name": t,
                        "description": f"{t}. NOT for anything else.",
                        "sql": sql,
                        "parameters": [{"name": f"p{i}", "type": "string"} for i in range(params)],
                    }
                    for t, sql, params in templates
                ],
            },
        },
    }


@pytest.mark.parametrize(
    ("sql", "params", "reason"),
    [
        ("DELETE FROM contracts", 0, "only SELECT is allowed, found DELETE"),
        ("SELECT * FROM users", 0, "table 'users' is not allowlisted (allowed: contracts)"),
        (
            "SELECT * FROM contracts WHERE title = $1",
            0,
            "the query has 1 placeholder(s) but the template lists 0 parameter(s)",
        ),
        ("SELECT * FROM contracts", 1, "the query has 0 placeholder(s) but the template lists 1"),
    ],
)
def test_a_template_the_guard_refuses_names_its_field(sql: str, params: int, reason: str) -> None:
    obj = _sql("q", "T1", ("fine", "SELECT COUNT(*) FROM contracts", 0), ("bad", sql, params))
    with pytest.raises(InvalidSpec) as err:
        parse_binding(obj)
    assert err.value.field == "spec.sqlQuery.templates[1].sql"
    assert str(err.value).startswith(
        f"spec.sqlQuery.templates[1].sql: template bad is refused by the SQL guard: {reason}"
    )
    assert bindings_for([obj], "a").accepted == []


def test_a_template_named_like_another_bindings_tool_is_refused() -> None:
    web = {
        "metadata": {"name": "web", "creationTimestamp": "T1"},
        "spec": {
            "agentRef": {"name": "a"},
            "type": "web_search",
            "webSearch": {"url": "http://searx:8080", "allowExternal": True},
        },
    }
    old = _sql("old-sql", "T2", ("count_contracts", "SELECT COUNT(*) FROM contracts", 0))
    young = _sql("young-sql", "T3", ("web_search", "SELECT COUNT(*) FROM contracts", 0))
    again = _sql("again-sql", "T4", ("count_contracts", "SELECT 1 FROM contracts", 0))
    bound = bindings_for([young, again, web, old], "a")
    assert [b.name for b in bound.accepted] == ["web", "old-sql"]
    assert bound.refused["young-sql"] == (
        "spec.sqlQuery.templates[0].name: tool name web_search is already bound to agent a by "
        "ToolBinding web"
    )
    assert bound.refused["again-sql"].startswith(
        "spec.sqlQuery.templates[0].name: tool name count_contracts is already bound"
    )


@pytest.mark.parametrize("schedule", ["0 3 30 2 *", "0 0 31 4,6,9,11 *", "0 0 30,31 2 *"])
def test_a_schedule_that_never_fires_is_invalid(schedule: str) -> None:
    with pytest.raises(InvalidSpec, match=r"^spec.schedule: .* never fires"):
        check_fires(schedule)


def test_a_schedule_that_fires_rarely_is_fine() -> None:
    check_fires("0 0 29 2 *")  # leap years only
