"""Benchmark: RAGAS eval runner wall time against the ideal, with a scripted judge.

The judge is the scripted model server in a child process, answering every ragas prompt with a
valid verdict after a fixed latency. The ideal wall time is

    judge calls × judge latency / concurrency

(every call costs the same fixed latency; with ``concurrency`` calls always in flight nothing is
faster). Target: measured ≤ 1.1 × ideal. Judge calls are counted by the server, not assumed.

    .venv/bin/python bench/eval_runner.py --rows 24 --latency-ms 200 --concurrency 8

Prints one JSON line with the figures (docs/performance.md, section "Evals").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

from sleuth.evals.rag.runner import run_metrics
from sleuth.scoring.judge import JudgeConfig, build_judge
from sleuth.scoring.metrics import ALL_METRICS, judge_calls_per_row
from sleuth.scoring.samples import RagSample
from sleuth.scripted import (
    LatencyProfile,
    Match,
    Rule,
    Scenario,
    ScriptedProcess,
    ScriptedResponse,
)

STATEMENTS = ["Redis keeps data in memory.", "Redis answers GET in under 1 ms."]


def _rule(marker: str, payload: dict[str, object]) -> Rule:
    return Rule(
        match=Match(any_message_contains=marker, json_mode=True),
        response=ScriptedResponse(content=json.dumps(payload), completion_tokens=40),
    )


def judge_scenario(latency_ms: float) -> Scenario:
    """Valid answers for every prompt of the five metrics, after ``latency_ms``."""
    nli = {
        "statements": [
            {"statement": s, "reason": "bench", "verdict": int(i % 2 == 0)}
            for i, s in enumerate(STATEMENTS)
        ]
    }
    return Scenario(
        rules=[
            _rule("Break down each sentence", {"statements": STATEMENTS}),
            _rule("judge the faithfulness of a series of statements", nli),
            _rule("verify if the context was useful", {"reason": "bench", "verdict": 1}),
            _rule(
                "classify if the statement can be attributed",
                {
                    "classifications": [
                        {"statement": s, "reason": "bench", "attributed": 1} for s in STATEMENTS
                    ]
                },
            ),
            _rule(
                "Generate a question for the given answer",
                {"question": "How fast is Redis?", "noncommittal": 0},
            ),
        ],
        fallback=ScriptedResponse(status=500, error_message="bench judge: unknown prompt"),
        latency=LatencyProfile(ttft_points=[(0, latency_ms)], per_token_ms=0.0),
    )


def rows(n: int, contexts: int) -> list[RagSample]:
    return [
        RagSample(
            id=f"row-{i}",
            question=f"Question {i}: what latency does Redis offer?",
            answer="Redis keeps data in memory. It answers GET in under 1 ms.",
            contexts=[f"Chunk {i}.{k}: Redis facts number {k}." for k in range(contexts)],
            reference="Redis is in memory and GET takes under 1 ms.",
            stratum=("easy", "multi-hop", "adversarial")[i % 3],  # type: ignore[arg-type]
        )
        for i in range(n)
    ]


async def measure(args: argparse.Namespace, url: str) -> dict[str, object]:
    data = rows(args.rows, args.contexts)
    metrics = list(ALL_METRICS) if args.metrics == "all" else args.metrics.split(",")
    bundle = build_judge(
        JudgeConfig(
            base_url=url,
            model="judge",
            concurrency=args.concurrency,
            timeout_s=60,
            client=args.client,
        )
    )
    try:
        start, cpu0 = time.perf_counter(), time.process_time()
        run = await run_metrics(data, metrics, bundle)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
        limit = bundle.limits[0]
    finally:
        await bundle.aclose()
    calls = bundle.meter.judge_requests
    expected = args.rows * sum(judge_calls_per_row(m, args.contexts) for m in metrics)
    ideal = calls * args.latency_ms / 1000 / args.concurrency
    return {
        "rows": args.rows,
        "contexts": args.contexts,
        "metrics": metrics,
        "concurrency": args.concurrency,
        "latency_ms": args.latency_ms,
        "judge_calls": calls,
        "judge_calls_expected": expected,
        "failures": len(run.failures),
        "wall_s": round(wall, 3),
        "ideal_s": round(ideal, 3),
        "ratio": round(wall / ideal, 3) if ideal else None,
        "mean_judge_request_s": round(limit.chat_busy_s / max(1, limit.chat_requests), 4),
        "slot_utilisation": round(limit.busy_s / (wall * args.concurrency), 3),
        "client_cpu_ms_per_call": round(cpu * 1000 / max(1, calls), 2),
        # wall against the requests' own measured durations: the runner's scheduling alone
        "ratio_vs_measured_requests": round(wall / (limit.busy_s / args.concurrency), 3)
        if limit.busy_s
        else None,
        "client": args.client,
        "load_avg_1m": os.getloadavg()[0],
        "target_ratio": 1.1,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=24)
    p.add_argument("--contexts", type=int, default=5)
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--metrics", default="all", help="comma-separated, or 'all'")
    p.add_argument("--client", choices=["direct", "instructor"], default="direct")
    args = p.parse_args()
    with ScriptedProcess(judge_scenario(args.latency_ms)) as server:
        result = asyncio.run(measure(args, server.url))
    print(json.dumps(result))
    ok = result["failures"] == 0 and result["judge_calls"] == result["judge_calls_expected"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
