"""sql_query: the read-only executor, the free-form tool, named templates and the ``sleuth sql``
command. The SQL guard they run is :mod:`sleuth.core.sql.guard` (the operator runs it too)."""
