"""``sleuth sql check --allow T1,T2 "SQL"``: the guard as a black box.

Exit 0 and print ``accepted`` (with the tables read) when the guard accepts; exit 2 and print
``refused (<rule>): <reason>`` on stderr when it refuses (the rule's code:
:data:`sleuth.core.sql.guard.RULES`). ``--params N`` also checks the placeholder count.
Platform teams run it in CI to vet query templates before they reach a ToolBinding.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sleuth.core.sql.guard import GuardPolicy, SqlRejected, check_sql

EXIT_REFUSED = 2


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sql", help="SQL tool utilities (the guard)")
    sub = parser.add_subparsers(dest="sql_command", metavar="SUBCOMMAND", required=True)
    check = sub.add_parser(
        "check",
        help="check a query against the SQL guard: exit 0 accepted, 2 refused",
        description="Check one query against the sql_query guard. Exit 0 when accepted, "
        "2 with the reason on stderr when refused.",
    )
    check.add_argument(
        "--allow",
        required=True,
        metavar="TABLE[,TABLE]",
        help="comma-separated allowlist, e.g. contracts,sales.orders",
    )
    check.add_argument(
        "--params",
        type=int,
        default=None,
        metavar="N",
        help="number of params the query will be given (checks $1..$N)",
    )
    check.add_argument("sql", help='the query, e.g. "SELECT count(*) FROM contracts"')
    check.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    policy = GuardPolicy.of(args.allow.split(","))
    params = None if args.params is None else [None] * args.params
    try:
        checked = check_sql(args.sql, policy, params)
    except SqlRejected as err:
        print(f"refused ({err.rule}): {err.reason}", file=sys.stderr)
        return EXIT_REFUSED
    tables = ", ".join(checked.tables) or "none"
    print(f"accepted: reads {tables}; {checked.placeholders} placeholder(s)")
    return 0
