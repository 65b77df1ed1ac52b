"""The SQL guard as the sql_query tool sees it: a refusal is a tool argument error.

The guard itself is :func:`sleuth.core.sql.guard.check_sql` (the operator runs it too, on a
ToolBinding's templates); here its refusal becomes :class:`SqlRefused`, which the agent loop
returns to the model as an observation naming the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from sleuth.agent.tools.base import ToolArgumentError
from sleuth.core.sql.guard import MAX_SQL_CHARS, CheckedQuery, GuardPolicy, SqlRejected
from sleuth.core.sql.guard import check_sql as _check_sql


class SqlRefused(ToolArgumentError):
    """The guard refused the query; ``reason`` says which rule, in words for the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"query refused: {reason}", tool="sql_query")
        self.reason = reason


def check_sql(
    sql: str, policy: GuardPolicy, params: Sequence[object] | None = None
) -> CheckedQuery:
    """Accept ``sql`` or raise :class:`SqlRefused`. ``params`` None skips the count check."""
    try:
        return _check_sql(sql, policy, params)
    except SqlRejected as err:
        raise SqlRefused(err.reason) from None


__all__ = ["MAX_SQL_CHARS", "CheckedQuery", "GuardPolicy", "SqlRefused", "check_sql"]
