"""SQL guard cost per query: parse + walk + allowlist + placeholders (target ≤ 1 ms p99).

    .venv/bin/python bench/sql_guard.py [--rounds 300] [--quick]

Runs :func:`sleuth.core.sql.guard.check_sql` on a mix of queries — the seed's query,
typical model SQL (joins, CTEs, window functions, UNION), and the hostile corpus of the tests
(tests/tools/hostile_sql.py, ~260 queries refused) — ``rounds`` times each, timing every call.
Reports p50/p99/max per group in microseconds and writes JSON to bench/results/sql_guard.json.
No database: this is the guard alone, the cost added before a query reaches PostgreSQL.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from sleuth.core.sql.guard import GuardPolicy, SqlRejected, check_sql

ROOT = Path(__file__).resolve().parents[1]
POLICY = GuardPolicy.of(["contracts", "providers", "sales.orders"])

TYPICAL: list[tuple[str, list[object]]] = [
    (
        "SELECT COUNT(*) AS num_contracts, SUM(amount) AS total_eur FROM contracts "
        "WHERE amount > $1 AND year = $2 AND provider_region = $3",
        [100000, 2025, "EU"],
    ),
    ("SELECT * FROM contracts WHERE id = $1", [1]),
    (
        "SELECT p.region, count(*), avg(c.amount) FROM contracts c JOIN providers p "
        "ON p.name = c.provider WHERE c.year = $1 GROUP BY p.region ORDER BY 2 DESC LIMIT 10",
        [2025],
    ),
    (
        "WITH big AS (SELECT * FROM contracts WHERE amount > $1), "
        "by_provider AS (SELECT provider, sum(amount) AS total FROM big GROUP BY provider) "
        "SELECT provider, total, rank() OVER (ORDER BY total DESC) FROM by_provider",
        [100000],
    ),
    (
        "SELECT year, sum(amount) FROM contracts WHERE provider_region = $1 GROUP BY year "
        "UNION ALL SELECT 0, sum(amount) FROM contracts WHERE provider_region = $1",
        ["EU"],
    ),
    (
        "SELECT date_trunc('month', signed_on) AS month, count(*) FROM contracts "
        "WHERE signed_on >= $1::date AND signed_on < $2::date GROUP BY 1 ORDER BY 1",
        ["2025-01-01", "2026-01-01"],
    ),
]


def _hostile() -> list[tuple[str, list[object]]]:
    path = ROOT / "tests" / "agent" / "tools" / "hostile_sql.py"
    spec = importlib.util.spec_from_file_location("hostile_sql", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [(sql, params) for _, sql, params in module.corpus()]


Samples = tuple[list[float], list[float]]


def _time(queries: list[tuple[str, list[object]]], rounds: int) -> Samples:
    """Per call: thread CPU time and wall time, in microseconds."""
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(rounds):
        for sql, params in queries:
            start_cpu, start_wall = time.thread_time_ns(), time.perf_counter_ns()
            with contextlib.suppress(SqlRejected):
                check_sql(sql, POLICY, params)
            cpu.append((time.thread_time_ns() - start_cpu) / 1000)
            wall.append((time.perf_counter_ns() - start_wall) / 1000)
    return cpu, wall


def _pct(ordered: list[float], q: float) -> float:
    return round(ordered[max(0, int(len(ordered) * q) - 1)], 1)


def _summary(samples: Samples) -> dict[str, float]:
    cpu, wall = sorted(samples[0]), sorted(samples[1])
    return {
        "calls": len(cpu),
        "cpu_p50_us": round(statistics.median(cpu), 1),
        "cpu_p99_us": _pct(cpu, 0.99),
        "wall_p50_us": round(statistics.median(wall), 1),
        "wall_p99_us": _pct(wall, 0.99),
        "wall_max_us": round(wall[-1], 1),
    }


def _compiled() -> bool:
    """True when sqlglot runs as mypyc-compiled extensions (the ``sqlglotc`` package)."""
    import sqlglot.parser

    return not str(getattr(sqlglot.parser, "__file__", "")).endswith(".py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="30 rounds")
    args = parser.parse_args()
    rounds = 30 if args.quick else args.rounds
    hostile = [(s, p) for s, p in _hostile() if len(s) < 5000]  # the 32 kB query is its own row
    huge = [(s, p) for s, p in _hostile() if len(s) >= 5000]
    _time(TYPICAL + hostile, 3)  # warm up
    groups = {
        "typical (accepted)": _summary(_time(TYPICAL, rounds)),
        "hostile corpus (refused)": _summary(_time(hostile, max(1, rounds // 10))),
        "over-long query (refused by length)": _summary(_time(huge, rounds)),
    }
    typical, refused = _time(TYPICAL, rounds // 3), _time(hostile, max(1, rounds // 30))
    groups["all"] = _summary((typical[0] + refused[0], typical[1] + refused[1]))
    result: dict[str, Any] = {
        "benchmark": "sql_guard",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "compiled_sqlglot": _compiled(),
        "groups": groups,
    }
    header = ("calls", "cpu_p50_us", "cpu_p99_us", "wall_p50_us", "wall_p99_us", "wall_max_us")
    print(f"{'group':<38}" + "".join(f"{h:>13}" for h in header))
    for name, row in groups.items():
        print(f"{name:<38}" + "".join(f"{row[h]:>13}" for h in header))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall includes waits)")
    out = ROOT / "bench" / "results" / "sql_guard.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
