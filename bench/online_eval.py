"""Online evaluation under load: request latency with sampling on versus off, side by side.

    .venv/bin/python bench/online_eval.py [--requests 200] [--rounds 3] [--concurrency 16]
                                          [--rates 0,0.05,1,1x8]

One scripted model server process (the seed's latency profile: TTFT 150 ms, 5 ms per token)
answers the agents (a sql_query call, then a 31-token answer) and, as the judge, the ragas
prompts of faithfulness and answer relevancy (JSON mode, same latency profile). One agent
service process (``sleuth agent``) per sample rate (``1x8``: rate 1 with 8 scoring workers),
each with an in-process tool sleeping the seed's 50 ms, and with the judge defaulting to its own
model server as in a cluster. In each
round every agent in turn gets ``--requests`` requests from ``--concurrency`` closed-loop
clients (so the rates share the machine's conditions), then its evaluator's queue drains before
the next agent starts (its judge work counts in its CPU, not in the next agent's latency);
latency is measured by the client (POST /v1/query, wall time). ``--judge separate`` (default)
gives the judge its own scripted server process, so the figures show the agent's own cost;
``--judge shared`` lets the agents' model server judge too (the cluster default, where judge
load competes with user requests at the model server). Also reported per rate: what the
evaluator did (sampled, scored, dropped, errors) from the agent's /metrics.

Writes ``bench/results/online_eval.json`` and a markdown table beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.core.tools import ToolSpec
from sleuth.scripted import (
    EmbeddingScript,
    Match,
    Rule,
    Scenario,
    ScriptedProcess,
    ScriptedResponse,
    ScriptedToolCall,
    seed_latency_profile,
)
from sleuth.tools.base import ToolOutput

HERE = Path(__file__).resolve().parent
QUESTION = "How many contracts above 100k did we sign in 2025 with EU providers?"
ANSWER = "You signed 47 contracts above 100k with EU providers in 2025, worth 8.3 M EUR."
GENERATED = "How many EU contracts above 100k were signed in 2025?"
STATEMENTS = ["47 contracts were signed.", "They are above 100k.", "In 2025.", "Worth 8.3 M."]
TOOL_MS = 50.0


@dataclass
class SleepSql:
    """The benchmark's sql_query: sleeps the seed's 50 ms, returns one row."""

    @property
    def spec(self) -> ToolSpec:
        params = {"type": "object", "properties": {"query": {"type": "string"}}}
        return ToolSpec("sql_query", "benchmark stand-in for sql_query", params)

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        await asyncio.sleep(TOOL_MS / 1000)
        return ToolOutput(content={"num_contracts": 47, "total_eur": 8300000})


def sleep_sql(config: object) -> SleepSql:
    """Tool factory for the agent's configuration file: ``online_eval:sleep_sql``."""
    return SleepSql()


def scenario() -> Scenario:
    verdicts = [
        {"statement": s, "reason": "scripted", "verdict": int(i < 3)}
        for i, s in enumerate(STATEMENTS)
    ]
    judge = {
        "Break down each sentence": {"statements": STATEMENTS},
        "judge the faithfulness of a series of statements": {"statements": verdicts},
        "Generate a question for the given answer": {"question": GENERATED, "noncommittal": 0},
    }
    return Scenario(
        rules=[
            Rule(
                match=Match(json_mode=True, last_user_contains=prompt),
                response=ScriptedResponse(content=json.dumps(body)),
            )
            for prompt, body in judge.items()
        ],
        turns=[
            ScriptedResponse(
                tool_calls=[ScriptedToolCall(name="sql_query", arguments={"query": "SELECT 1"})],
                completion_tokens=1,
            ),
            ScriptedResponse(content=ANSWER, completion_tokens=31),
        ],
        latency=seed_latency_profile(per_token_ms=5.0),
        embeddings=EmbeddingScript(
            dimensions=4, vectors={QUESTION: [1.0, 0, 0, 0], GENERATED: [0.8, 0.6, 0, 0]}
        ),
    )


class AgentProc:
    """``sleuth agent`` as a child process with the given sample rate."""

    def __init__(
        self,
        model_url: str,
        judge_url: str | None,
        rate: float,
        workers: int,
        queue_size: int,
        workdir: Path,
    ) -> None:
        self.rate = rate
        self.workers = workers
        self.name = f"rate-{rate:g}-c{workers}"
        self.config: dict[str, Any] = {
            "model": {"endpoint": model_url, "servedModelName": "scripted"},
            "toolCacheTTLSeconds": 0,
            "maxConcurrentRequests": 1000,
            "tools": [{"name": "sql_query", "type": "custom", "factory": "online_eval:sleep_sql"}],
            "onlineEval": {"sampleRate": rate, "concurrency": workers, "queueSize": queue_size},
        }
        if judge_url is not None:
            self.config["onlineEval"]["judge"] = {"endpoint": judge_url, "model": "judge"}
        self.path = workdir / f"{self.name}.json"
        self.log = workdir / f"{self.name}.log"
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.path.write_text(json.dumps(self.config), encoding="utf-8")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(HERE), "SLEUTH_AGENT_NAME": self.name}
        env["SLEUTH_AGENT_HOST"] = "127.0.0.1"
        cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
        cmd += ["agent", "--config", str(self.path), "--port", str(port)]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        wait_healthy(
            f"{self.url}/healthz",
            self.proc,
            timeout=120,
            name=self.name,
            output=lambda: self.log.read_text()[-2000:],
        )

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
            self.proc = None

    def cpu_s(self) -> float:
        """User + system CPU seconds of the agent process so far (Linux /proc)."""
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def drained(self, client: httpx.AsyncClient, timeout_s: float = 300) -> None:
        """Wait until every queued sample is scored (or failed): no judge work left behind
        to load the next agent's measurement."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            c = self.counters((await client.get(f"{self.url}/metrics")).text)
            done = c.get("scored_total", 0) + c.get("skipped_total", 0)
            done += sum(v for k, v in c.items() if k.startswith("errors_total"))
            if done >= c.get("sampled_total", 0) - c.get("dropped_total", 0):
                return
            await asyncio.sleep(1.0)  # rarely: each /metrics read costs the agent CPU too
        raise RuntimeError(f"{self.name}: the online-eval queue did not drain")

    def counters(self, text: str | None = None) -> dict[str, float]:
        if text is None:
            text = httpx.get(f"{self.url}/metrics", timeout=10).text
        out: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name.startswith("sleuth_agent_online_eval_") and s.labels.get(
                    "metric", "faithfulness"
                ) in ("faithfulness",):
                    key = s.name.removeprefix("sleuth_agent_online_eval_")
                    if "reason" in s.labels:
                        key += f"[{s.labels['reason']}]"
                    out[key] = out.get(key, 0.0) + s.value
                elif s.name in ("rag_faithfulness_score", "rag_answer_relevancy_score"):
                    out[s.name] = s.value
        return out


async def cpu_per_sample(url: str, samples: int = 40) -> float:
    """CPU ms to score one sample (both metrics) in this process, against a zero-latency judge.

    Zero latency on purpose: this VM's CPU accounting is tick-sampled, and a process woken by
    the judge's timer-aligned answers is charged whole ticks (the same scoring measured 250-400
    ms per sample against the seed's latency, 11-19 ms without it).
    """
    from sleuth.agent.metrics import AgentMetrics
    from sleuth.agent.onlineeval import METRICS, OnlineEvaluator, Sample
    from sleuth.core.api.agent_config import AgentConfig

    config = AgentConfig.model_validate(
        {
            "model": {"endpoint": url, "servedModelName": "scripted"},
            "onlineEval": {"sampleRate": 1.0, "concurrency": 1},
        }
    )
    evaluator = OnlineEvaluator(config, AgentMetrics("cpu").online)
    await evaluator.start()
    sample = Sample(QUESTION, ANSWER, ['{"num_contracts": 47, "total_eur": 8300000}'])
    try:
        for _ in range(5):  # warm-up
            await asyncio.gather(*(evaluator._score(m, sample) for m in METRICS))
        started = time.process_time()
        for _ in range(samples):
            await asyncio.gather(*(evaluator._score(m, sample) for m in METRICS))
        return (time.process_time() - started) * 1000 / samples
    finally:
        await evaluator.aclose()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def load(client: httpx.AsyncClient, url: str, requests: int, concurrency: int) -> list[float]:
    """Closed loop: ``concurrency`` clients share ``requests``; wall ms of each 200 answer."""
    latencies: list[float] = []
    left = [requests]

    async def client_loop() -> None:
        while left[0] > 0:
            left[0] -= 1
            started = time.perf_counter()
            r = await client.post(f"{url}/v1/query", json={"question": QUESTION})
            if r.status_code != 200 or r.json()["answer"] != ANSWER:
                raise RuntimeError(f"bad answer {r.status_code}: {r.text[:200]}")
            latencies.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client_loop() for _ in range(concurrency)))
    return latencies


async def run(agents: list[AgentProc], args: argparse.Namespace) -> list[dict[str, Any]]:
    samples: dict[str, list[float]] = {a.name: [] for a in agents}
    walls: dict[str, float] = {a.name: 0.0 for a in agents}
    cpus: dict[str, float] = {a.name: 0.0 for a in agents}
    limits = httpx.Limits(max_connections=args.concurrency * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        for a in agents:  # warm-up: connections, imports, first judge calls
            await load(client, a.url, args.concurrency * 2, args.concurrency)
            await a.drained(client)
        for r in range(args.rounds):
            for a in agents:
                started, cpu = time.perf_counter(), a.cpu_s()
                samples[a.name] += await load(client, a.url, args.requests, args.concurrency)
                walls[a.name] += time.perf_counter() - started
                await a.drained(client)  # its judge work counts in its own CPU
                cpus[a.name] += a.cpu_s() - cpu
            print(f"round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    for a in agents:
        values = samples[a.name]
        rows.append(
            {
                "sample_rate": a.rate,
                "eval_concurrency": a.workers,
                "requests": len(values),
                "p50_ms": pct(values, 0.50),
                "p99_ms": pct(values, 0.99),
                "max_ms": max(values),
                "throughput_rps": len(values) / walls[a.name],
                "agent_cpu_ms_per_request": 1000 * cpus[a.name] / len(values),
                "evaluator": a.counters(),
            }
        )
    return rows


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| sample rate | eval concurrency | requests | p50 ms | p99 ms | req/s | agent CPU ms/req "
        "| sampled | scored | dropped | errors | faithfulness |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        e = r["evaluator"]
        errors = sum(v for k, v in e.items() if k.startswith("errors_total"))
        faith = e.get("rag_faithfulness_score")
        lines.append(
            f"| {r['sample_rate']:g} | {r['eval_concurrency']} | {r['requests']} | "
            f"{r['p50_ms']:.0f} | {r['p99_ms']:.0f} | "
            f"{r['throughput_rps']:.1f} | {r['agent_cpu_ms_per_request']:.1f} | "
            f"{e.get('sampled_total', 0):.0f} | "
            f"{e.get('scored_total', 0):.0f} | {e.get('dropped_total', 0):.0f} | {errors:.0f} | "
            f"{'-' if faith is None else f'{faith:.2f}'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="per agent per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--rates",
        default="0,0.05,1,1x8",
        help="comma-separated RATE or RATExWORKERS (onlineEval.concurrency, default 2)",
    )
    parser.add_argument(
        "--judge",
        choices=("separate", "shared"),
        default="separate",
        help="separate: the judge is its own scripted server (the agent's cost alone); shared: "
        "the agent's model server judges too (the default in a cluster)",
    )
    parser.add_argument("--queue-size", type=int, default=20, help="onlineEval.queueSize")
    parser.add_argument("--out", default="bench/results/online_eval.json")
    args = parser.parse_args()
    rates = [
        (float(r), int(w or 2)) for r, _, w in (x.partition("x") for x in args.rates.split(","))
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with ScriptedProcess(scenario()) as server, ScriptedProcess(scenario()) as judge:
        judge_url = judge.url if args.judge == "separate" else None
        agents = [
            AgentProc(server.url, judge_url, rate, workers, args.queue_size, out.parent)
            for rate, workers in rates
        ]
        try:
            for a in agents:
                a.start()
            rows = asyncio.run(run(agents, args))
        finally:
            for a in agents:
                a.stop()
    zero = scenario()
    zero = zero.model_copy(
        update={
            "latency": zero.latency.model_copy(
                update={"ttft_points": [(0, 0.0)], "per_token_ms": 0.0}
            )
        }
    )
    with ScriptedProcess(zero) as fast:
        scoring_cpu_ms = asyncio.run(cpu_per_sample(fast.url))
    result = {
        "scoring_cpu_ms_per_sample": scoring_cpu_ms,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_1m_at_end": os.getloadavg()[0],
        },
        "command": " ".join(["bench/online_eval.py", *sys.argv[1:]]),
        "concurrency": args.concurrency,
        "judge": args.judge,
        "queue_size": args.queue_size,
        "tool_ms": TOOL_MS,
        "rows": rows,
    }
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    print(f"scoring CPU per sample (both metrics, zero-latency judge): {scoring_cpu_ms:.1f} ms")
    print(f"wrote {out}; load average at end {result['machine']['loadavg_1m_at_end']:.2f}")


if __name__ == "__main__":
    main()
