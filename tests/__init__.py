"""sleuth's tests: a package, so that shared helpers are imported by name (``tests.support``).

The folders below mirror the distributions (``tests/core`` ↔ ``sleuth.core``, ...); they have no
``__init__.py`` of their own, so none of them can shadow a standard-library module even where
``tests/`` itself is on ``sys.path`` (``python tests/run.py``). docs/testing.md has the layout.
"""
