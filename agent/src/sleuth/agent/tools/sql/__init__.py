"""sql_query: the guard, the read-only executor, named templates and the ``sleuth sql`` command."""

from sleuth.agent.tools.sql.guard import CheckedQuery, GuardPolicy, SqlRefused, check_sql

__all__ = ["CheckedQuery", "GuardPolicy", "SqlRefused", "check_sql"]
