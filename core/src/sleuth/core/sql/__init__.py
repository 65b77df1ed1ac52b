"""The SQL guard (:mod:`sleuth.core.sql.guard`) and its function lists: a pure check shared by the
sql_query tool and the operator (needs the ``sql`` extra: sqlglot)."""
