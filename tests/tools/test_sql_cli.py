"""``sleuth sql check``: a black box (a real process) with exit codes 0 and 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleuth.core.cli", "sql", "check", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_accepts_seed_query() -> None:
    done = _check(
        "--allow",
        "contracts,providers",
        "--params",
        "3",
        "SELECT COUNT(*), SUM(amount) FROM contracts "
        "WHERE amount > $1 AND year = $2 AND provider_region = $3",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "accepted: reads contracts; 3 placeholder(s)"


@pytest.mark.parametrize(
    ("sql", "rule", "reason"),
    [
        (
            "SELECT * FROM payroll",
            "table_not_allowed",
            "table 'payroll' is not allowlisted (allowed: contracts)",
        ),
        ("DROP TABLE contracts", "not_select", "only SELECT is allowed, found DROP"),
        (
            "SELECT 1; DELETE FROM contracts",
            "one_statement",
            "exactly one statement is allowed, found 2",
        ),
    ],
)
def test_refuses_with_rule_reason_and_exit_2(sql: str, rule: str, reason: str) -> None:
    done = _check("--allow", "contracts", sql)
    assert done.returncode == 2
    assert done.stderr.strip() == f"refused ({rule}): {reason}"
    assert done.stdout == ""


def test_param_count_mismatch_is_refused() -> None:
    done = _check("--allow", "contracts", "--params", "2", "SELECT * FROM contracts WHERE id = $1")
    assert done.returncode == 2
    assert "1 placeholder(s) but 2 param(s)" in done.stderr
