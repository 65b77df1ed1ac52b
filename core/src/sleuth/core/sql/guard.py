"""The SQL guard: one read-only SELECT over allowlisted tables, or a refusal with the reason.

The guard parses the model's SQL with sqlglot (postgres dialect) and walks the whole tree. It
accepts exactly one ``SELECT`` (``WITH``, ``UNION``/``INTERSECT``/``EXCEPT`` and subqueries
allowed) when:

- every table it reads, wherever it appears (FROM, JOIN, subquery, CTE body, set operation), is on
  the allowlist; names bound by a ``WITH`` in scope are CTEs, not tables; schema-qualified names
  must match a schema-qualified allowlist entry (``public.x`` matches entry ``x``); three-part
  names are refused; system catalogs and ``information_schema`` are tables like any other;
- no node writes, locks or changes the session: no INSERT/UPDATE/DELETE/MERGE (also inside a
  CTE), DDL, COPY, SET, ``SELECT ... INTO``, ``FOR UPDATE/SHARE``, utility commands;
- no function is on the denylist (``pg_*``, ``lo_*``, ``dblink*``, ``set_config``, ...), no
  function is schema-qualified, and functions sqlglot does not model are on a small allowlist;
- placeholders are ``$1..$n`` only, each used, and ``n`` equals the number of params;
- the text has none of the lexical forms where sqlglot and PostgreSQL could read the same bytes
  differently (dollar-quoted strings, ``U&`` escapes, NUL bytes).

Every refusal is a :class:`SqlRejected` carrying ``rule``, a stable code from :data:`RULES`
(``table_not_allowed``, ``function_denied``, ...), so a trace, a log line or an audit record says
which rule fired, and ``reason``, the same in words for the model (docs/tools.md lists the codes).

The guard is the first layer; the executor adds a READ ONLY transaction, a statement timeout and
a row cap, and the role it connects as can only SELECT (docs/sql/readonly-role.sql).

It is a pure function on the lowest floor: the sql_query tool runs it on the model's SQL
(:mod:`sleuth.tools.sql.tool` returns a refusal to the model as an argument error naming the
rule), the operator on a ToolBinding's templates before it deploys them, and ``sleuth sql check``
in CI.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import cast

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import Token, TokenType

from sleuth.core.errors import SleuthError
from sleuth.core.sql.functions import (
    DENIED_FUNCTION_PREFIXES,
    DENIED_FUNCTIONS,
    SAFE_TABLE_FUNCTIONS,
    SAFE_UNMODELLED_FUNCTIONS,
)

# sqlglot logs a warning for every statement it parses as a generic Command; the guard refuses
# those with a clear reason, so the warning is noise.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

MAX_SQL_CHARS = 20_000

# Statement and clause node types that write, lock, or leave the SELECT world.
_FORBIDDEN_NODE_NAMES = (
    "Insert",
    "Update",
    "Delete",
    "Merge",
    "Create",
    "Drop",
    "Alter",
    "AlterColumn",
    "Command",
    "Into",
    "Lock",
    "Copy",
    "Set",
    "SetItem",
    "Transaction",
    "Commit",
    "Rollback",
    "TruncateTable",
    "Use",
    "Pragma",
    "LoadData",
    "Grant",
    "Revoke",
    "Cache",
    "Uncache",
    "Refresh",
    "Describe",
    "Returning",
    "Analyze",
    "Kill",
    "Comment",
    "Show",
    "Execute",
    "Declare",
    "Attach",
    "Detach",
    "Export",
)
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = tuple(
    t for t in (getattr(exp, n, None) for n in _FORBIDDEN_NODE_NAMES) if isinstance(t, type)
)

_FORBIDDEN_TOKENS = {
    TokenType.HEREDOC_STRING: "dollar-quoted strings are not allowed; use '...' strings",
    TokenType.UNICODE_STRING: "U& unicode escape strings are not allowed",
}
_UNICODE_ESCAPE = re.compile(r"u&\s*['\"]", re.IGNORECASE)

# The rules, by their stable code: what a refusal's ``rule`` says (docs/tools.md has the table).
EMPTY = "empty"
TOO_LONG = "too_long"
NUL_BYTE = "nul_byte"
LEXICAL_FORM = "lexical_form"
PARSE_ERROR = "parse_error"
ONE_STATEMENT = "one_statement"
NOT_SELECT = "not_select"
NOT_READ_ONLY = "not_read_only"
LOCKING_CLAUSE = "locking_clause"
FUNCTION_QUALIFIED = "function_qualified"
FUNCTION_DENIED = "function_denied"
FUNCTION_NOT_ALLOWED = "function_not_allowed"
TABLE_FUNCTION = "table_function"
FROM_ITEM = "from_item"
THREE_PART_NAME = "three_part_name"
TABLE_NOT_ALLOWED = "table_not_allowed"
PLACEHOLDER_STYLE = "placeholder_style"
PLACEHOLDER_GAP = "placeholder_gap"
PARAM_COUNT = "param_count"

RULES: dict[str, str] = {
    EMPTY: "the query is empty or blank",
    TOO_LONG: "the query is longer than the policy's maximum (20,000 characters)",
    NUL_BYTE: "the query contains a NUL byte",
    LEXICAL_FORM: "a form the parser and PostgreSQL could read differently: U& escapes, "
    "dollar-quoted strings",
    PARSE_ERROR: "the query does not parse as PostgreSQL",
    ONE_STATEMENT: "more (or fewer) than one statement",
    NOT_SELECT: "the statement is not a SELECT or a set operation of SELECTs",
    NOT_READ_ONLY: "a node that writes, locks or changes the session (DML, DDL, COPY, SET, "
    "SELECT INTO, utility commands), anywhere in the tree",
    LOCKING_CLAUSE: "FOR UPDATE / FOR SHARE",
    FUNCTION_QUALIFIED: "a schema-qualified function call",
    FUNCTION_DENIED: "a function on the denylist (pg_*, lo_*, dblink*, set_config, ...)",
    FUNCTION_NOT_ALLOWED: "a function the parser does not model and that is not on the short "
    "list of harmless ones",
    TABLE_FUNCTION: "a table function other than generate_series and unnest",
    FROM_ITEM: "a FROM item that is neither a table nor an allowed table function",
    THREE_PART_NAME: "a three-part table name (catalog.schema.table)",
    TABLE_NOT_ALLOWED: "a table (catalogs included) that is not on the allowlist",
    PLACEHOLDER_STYLE: "a placeholder other than $1, $2, ... (?, %s, :name, $0)",
    PLACEHOLDER_GAP: "placeholders that skip a number ($1 and $3 without $2)",
    PARAM_COUNT: "a number of params that differs from the number of placeholders",
}


class SqlRejected(SleuthError):
    """The guard refused the query: ``rule`` is the stable code of the rule that fired (a key of
    :data:`RULES`), ``reason`` says the same in words for the model."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"query refused ({rule}): {reason}")
        self.rule = rule
        self.reason = reason


@dataclass(frozen=True)
class GuardPolicy:
    """What the guard allows. Table names are PostgreSQL's stored (case-folded) names."""

    allowed_tables: frozenset[str]
    extra_functions: frozenset[str] = field(default_factory=frozenset)
    max_chars: int = MAX_SQL_CHARS

    @classmethod
    def of(cls, tables: Iterable[str], extra_functions: Iterable[str] = ()) -> GuardPolicy:
        """A policy from table names such as ``contracts`` or ``sales.orders``."""
        names = frozenset(t.strip() for t in tables if t.strip())
        return cls(
            allowed_tables=names, extra_functions=frozenset(f.lower() for f in extra_functions)
        )

    def allows(self, schema: str, name: str) -> bool:
        if schema:
            if f"{schema}.{name}" in self.allowed_tables:
                return True
            return schema == "public" and name in self.allowed_tables
        return name in self.allowed_tables


@dataclass(frozen=True)
class CheckedQuery:
    """A query the guard accepted: the text to run, the tables it reads, its placeholder count."""

    sql: str
    tables: tuple[str, ...]
    placeholders: int


def check_sql(
    sql: str, policy: GuardPolicy, params: Sequence[object] | None = None
) -> CheckedQuery:
    """Accept ``sql`` or raise :class:`SqlRejected`. ``params`` None skips the count check."""
    if not isinstance(sql, str) or not sql.strip():
        raise SqlRejected(EMPTY, "the query is empty")
    if len(sql) > policy.max_chars:
        raise SqlRejected(TOO_LONG, f"the query is longer than {policy.max_chars} characters")
    if "\x00" in sql:
        raise SqlRejected(NUL_BYTE, "the query contains a NUL byte")
    if _UNICODE_ESCAPE.search(sql):
        raise SqlRejected(LEXICAL_FORM, "U& unicode escapes are not allowed")
    root = _parse_one(sql)
    tables = _check_tree(root, policy)
    count = _check_placeholders(root, params)
    return CheckedQuery(sql=sql, tables=tuple(sorted(tables)), placeholders=count)


def tables_read(sql: str) -> frozenset[str] | None:
    """The tables a query reads, as PostgreSQL folds their names (``schema.name`` when written
    so; WITH names left out), or None when it is no single SELECT the guard could read. For
    rules that look at a query before it runs (the agent's approval rules); the guard itself
    still decides whether it may run."""
    try:
        root = _parse_one(sql)
    except SqlRejected:
        return None
    tables: set[str] = set()
    for node in root.walk():
        if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Identifier):
            continue
        name, schema = _ident(node.this), _ident(node.args.get("db"))
        if schema or not _is_cte_reference(node, name):
            tables.add(f"{schema}.{name}" if schema else name)
    return frozenset(tables)


def _parse_one(sql: str) -> exp.Expression:
    dialect = Postgres()
    try:
        tokens = dialect.tokenize(sql)
        _check_tokens(tokens)
        statements = [s for s in dialect.parser().parse(tokens, sql) if s is not None]
    except SqlRejected:
        raise
    except SqlglotError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise SqlRejected(PARSE_ERROR, f"the query does not parse as PostgreSQL: {first}") from None
    except Exception as err:  # the compiled parser (sqlglotc) may fail with other errors
        raise SqlRejected(
            PARSE_ERROR, f"the query does not parse as PostgreSQL: {type(err).__name__}"
        ) from None
    if len(statements) != 1:
        raise SqlRejected(
            ONE_STATEMENT, f"exactly one statement is allowed, found {len(statements)}"
        )
    root = cast(exp.Expression, statements[0])
    while isinstance(root, exp.Subquery) and not root.args.get("alias"):
        root = root.this
    if not isinstance(root, exp.Select | exp.SetOperation):
        raise SqlRejected(NOT_SELECT, f"only SELECT is allowed, found {_kind(root)}")
    return root


def _check_tokens(tokens: list[Token]) -> None:
    for token in tokens:
        reason = _FORBIDDEN_TOKENS.get(token.token_type)
        if reason is not None:
            raise SqlRejected(LEXICAL_FORM, reason)


def _kind(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return type(node).__name__.upper()


def _check_tree(root: exp.Expression, policy: GuardPolicy) -> set[str]:
    tables: set[str] = set()
    for node in root.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise SqlRejected(
                NOT_READ_ONLY, f"{_kind(node)} is not allowed; only a read-only SELECT"
            )
        if isinstance(node, exp.Func):
            _check_function(node, policy)
        elif isinstance(node, exp.Table):
            name = _check_table(node, policy)
            if name:
                tables.add(name)
        elif isinstance(node, exp.Select) and node.args.get("locks"):
            raise SqlRejected(
                LOCKING_CLAUSE, "locking clauses (FOR UPDATE / FOR SHARE) are not allowed"
            )
    return tables


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _check_function(node: exp.Func, policy: GuardPolicy) -> None:
    name = _function_name(node)
    if isinstance(node.parent, exp.Dot) and node.parent.expression is node:
        raise SqlRejected(
            FUNCTION_QUALIFIED, f"schema-qualified function calls are not allowed ({name})"
        )
    if name in DENIED_FUNCTIONS or name.startswith(DENIED_FUNCTION_PREFIXES):
        raise SqlRejected(FUNCTION_DENIED, f"function {name}() is not allowed")
    if (
        isinstance(node, exp.Anonymous)
        and name not in SAFE_UNMODELLED_FUNCTIONS
        and name not in SAFE_TABLE_FUNCTIONS
        and name not in policy.extra_functions
    ):
        raise SqlRejected(
            FUNCTION_NOT_ALLOWED, f"function {name}() is not on the list of allowed functions"
        )


def _ident(node: exp.Expression | None) -> str:
    """PostgreSQL's folding: unquoted identifiers are lower-cased, quoted ones kept."""
    if not isinstance(node, exp.Identifier):
        return ""
    return str(node.this) if node.quoted else str(node.this).lower()


def _check_table(node: exp.Table, policy: GuardPolicy) -> str:
    target = node.this
    if isinstance(target, exp.Func):
        name = _function_name(target)
        if name not in SAFE_TABLE_FUNCTIONS:
            raise SqlRejected(TABLE_FUNCTION, f"table function {name}() is not allowed")
        return ""
    if not isinstance(target, exp.Identifier):
        raise SqlRejected(FROM_ITEM, "this FROM item is not allowed; name a table")
    if node.args.get("catalog") is not None:
        raise SqlRejected(
            THREE_PART_NAME,
            f"three-part table names are not allowed ({node.sql(dialect='postgres')})",
        )
    name = _ident(target)
    schema = _ident(node.args.get("db"))
    if not schema and _is_cte_reference(node, name):
        return ""
    if not policy.allows(schema, name):
        shown = f"{schema}.{name}" if schema else name
        allowed = ", ".join(sorted(policy.allowed_tables)) or "none"
        raise SqlRejected(
            TABLE_NOT_ALLOWED, f"table {shown!r} is not allowlisted (allowed: {allowed})"
        )
    return f"{schema}.{name}" if schema else name


def _is_cte_reference(table: exp.Table, name: str) -> bool:
    """True when a WITH in scope binds ``name``; only names PostgreSQL would also see count."""
    child: exp.Expression = table
    came_from_cte: exp.CTE | None = None
    parent = cast(exp.Expression | None, table.parent)
    while parent is not None:
        if isinstance(child, exp.CTE):
            came_from_cte = child
        with_ = parent.args.get("with_") or parent.args.get("with")
        if isinstance(with_, exp.With):
            ctes = list(with_.expressions)
            if child is with_ and came_from_cte in ctes:
                index = ctes.index(came_from_cte)
                visible = ctes[: index + 1] if with_.args.get("recursive") else ctes[:index]
            elif child is with_:
                visible = []
            else:
                visible = ctes
            if any(_ident(cte.args["alias"].this) == name for cte in visible):
                return True
        child, parent = parent, cast(exp.Expression | None, parent.parent)
    return False


def _check_placeholders(root: exp.Expression, params: Sequence[object] | None) -> int:
    numbers: set[int] = set()
    for node in root.walk():
        if isinstance(node, exp.Placeholder):
            raise SqlRejected(PLACEHOLDER_STYLE, "only $1, $2, ... placeholders are allowed")
        if isinstance(node, exp.Parameter):
            value = node.this
            if not (isinstance(value, exp.Literal) and not value.is_string):
                raise SqlRejected(PLACEHOLDER_STYLE, "only $1, $2, ... placeholders are allowed")
            text = str(value.this)
            if not text.isdigit() or int(text) < 1:
                raise SqlRejected(PLACEHOLDER_STYLE, f"invalid placeholder ${text}")
            numbers.add(int(text))
    count = max(numbers, default=0)
    if numbers != set(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - numbers)
        raise SqlRejected(
            PLACEHOLDER_GAP,
            f"placeholders must be $1..${count} without gaps (missing ${missing[0]})",
        )
    if params is not None and len(params) != count:
        raise SqlRejected(
            PARAM_COUNT, f"the query has {count} placeholder(s) but {len(params)} param(s) given"
        )
    return count


__all__ = [
    "MAX_SQL_CHARS",
    "RULES",
    "CheckedQuery",
    "GuardPolicy",
    "SqlRejected",
    "check_sql",
    "tables_read",
]
