"""Every SQL guard rule refuses with its own stable code, and docs/tools.md lists each code.

The hostile corpus (tests/tools/test_sql_guard.py) proves what the guard refuses; here each rule
of :data:`sleuth.core.sql.guard.RULES` is made to fire once, so a refusal in a trace, a log line
or ``sleuth sql check`` names the rule that fired, and a new rule without a code (or a code
without a test and a line in the docs) fails.
"""

from __future__ import annotations

import re

import pytest

from sleuth.core.sql.guard import RULES, GuardPolicy, SqlRejected, check_sql
from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

POLICY = GuardPolicy(allowed_tables=frozenset({"contracts"}), max_chars=200)

# rule → (sql, params): a query that breaks that rule and no earlier one
ONE_PER_RULE: dict[str, tuple[str, list[object] | None]] = {
    "empty": ("   ", None),
    "too_long": ("SELECT 1 " + "-" * 200, None),
    "nul_byte": ("SELECT 1\x00", None),
    "lexical_form": ("SELECT $$x$$ FROM contracts", None),
    "parse_error": ("SELECT (", None),
    "one_statement": ("SELECT 1; SELECT 2", None),
    "not_select": ("DELETE FROM contracts", None),
    "not_read_only": ("WITH d AS (DELETE FROM contracts RETURNING *) SELECT 1", None),
    "locking_clause": ("SELECT * FROM contracts FOR SHARE", None),
    "function_qualified": ("SELECT public.lower('a') FROM contracts", None),
    "function_denied": ("SELECT pg_sleep(1)", None),
    "function_not_allowed": ("SELECT frobnicate(1) FROM contracts", None),
    "table_function": ("SELECT * FROM pg_ls_dir('.')", None),
    "from_item": ("SELECT * FROM $1", None),
    "three_part_name": ("SELECT * FROM db.public.contracts", None),
    "table_not_allowed": ("SELECT * FROM payroll", None),
    "placeholder_style": ("SELECT * FROM contracts WHERE id = ?", None),
    "placeholder_gap": ("SELECT * FROM contracts WHERE id = $2", None),
    "param_count": ("SELECT * FROM contracts WHERE id = $1", []),
}


def test_every_rule_has_a_refusal_here() -> None:
    assert set(ONE_PER_RULE) == set(RULES)


@pytest.mark.parametrize("rule", sorted(ONE_PER_RULE))
def test_each_refusal_carries_its_rule_code(rule: str) -> None:
    sql, params = ONE_PER_RULE[rule]
    with pytest.raises(SqlRejected) as info:
        check_sql(sql, POLICY, params)
    assert info.value.rule == rule, info.value.reason
    assert str(info.value) == f"query refused ({rule}): {info.value.reason}"
    assert info.value.reason


def test_codes_are_stable_words() -> None:
    for code in RULES:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", code), code


def test_docs_list_every_rule_code() -> None:
    docs = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    missing = [code for code in RULES if f"| `{code}` |" not in docs]
    assert not missing, f"docs/tools.md lacks a row for: {missing}"
