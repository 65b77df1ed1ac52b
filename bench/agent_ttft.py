"""Time to first answer token against total latency, through the agent's streamed HTTP API.

    .venv/bin/python bench/agent_ttft.py [--conversations 48] [--concurrency 16]

Also section (3) of ``bench/agent_latency.py``. ``sleuth agent`` runs as a child process (tools
in-process, sleeping the seed's latencies: ``agent_ttft:sleep_sql``/``sleep_vector``, no cache)
against the scripted model server with the seed's profile, for the cases of
``agent_latency.CASES``. Each conversation is one ``POST /v1/chat/completions`` with
``"stream": true``, read as server-sent events: **TTFT** is the time to the first chunk with
answer text, **total** the time to ``[DONE]``. **Ideal TTFT** is the sum of the simulated parts
up to the final synthesis's first token (every tool-call turn, every tool round, the synthesis's
TTFT); ideal total adds the synthesis's other tokens. Before token streaming (issue 20) the
first answer text came with the last, so TTFT was the total.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.scripted import ScriptedProcess

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agent_latency import (  # noqa: E402  (a sibling script)
    CASES,
    PROFILE,
    QUESTION,
    TOOL_MS,
    SleepTool,
    ideal_ms,
    pct,
    scenario_for,
)


def sleep_sql(config: object) -> SleepTool:
    """Tool factory for the agent's configuration file: ``agent_ttft:sleep_sql``."""
    return SleepTool("sql_query", TOOL_MS["sql_query"] / 1000)


def sleep_vector(config: object) -> SleepTool:
    """Tool factory for the agent's configuration file: ``agent_ttft:sleep_vector``."""
    return SleepTool("vector_search", TOOL_MS["vector_search"] / 1000)


class AgentChild:
    """``sleuth agent`` with the benchmark's tools, as a child process."""

    def __init__(self, model_url: str, workdir: Path) -> None:
        tools = [
            {"name": "sql_query", "type": "custom", "factory": "agent_ttft:sleep_sql"},
            {"name": "vector_search", "type": "custom", "factory": "agent_ttft:sleep_vector"},
        ]
        self.config = {
            "model": {"endpoint": model_url, "servedModelName": "scripted"},
            "toolCacheTTLSeconds": 0,
            "maxConcurrentRequests": 1000,
            "onlineEval": {"sampleRate": 0},
            "tools": tools,
        }
        self.workdir = workdir
        self.url = ""
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> AgentChild:
        path = self.workdir / "agent.json"
        path.write_text(json.dumps(self.config), encoding="utf-8")
        log = self.workdir / "agent.log"
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(HERE), "SLEUTH_AGENT_NAME": "ttft"}
        env["SLEUTH_AGENT_HOST"] = "127.0.0.1"
        cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
        cmd += ["agent", "--config", str(path), "--port", str(port)]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{port}"
        wait_healthy(
            f"{self.url}/healthz",
            self.proc,
            timeout=120,
            name="agent",
            output=lambda: log.read_text()[-2000:],
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop_process(self.proc)


async def one(client: httpx.AsyncClient, url: str) -> tuple[float, float]:
    """(TTFT ms, total ms) of one streamed conversation."""
    body = {"messages": [{"role": "user", "content": QUESTION}], "stream": True}
    started = time.perf_counter()
    first: float | None = None
    async with client.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if first is None and line.startswith("data: {"):
                choices = json.loads(line[6:])["choices"]
                if choices and choices[0]["delta"].get("content"):
                    first = time.perf_counter()
    total = time.perf_counter() - started
    if first is None:
        raise RuntimeError("the stream carried no answer text")
    return (first - started) * 1000, total * 1000


async def measure(url: str, conversations: int, concurrency: int) -> list[tuple[float, float]]:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def run() -> tuple[float, float]:
            async with gate:
                return await one(client, url)

        return await asyncio.gather(*(run() for _ in range(conversations)))


async def ttft_section(
    server: ScriptedProcess, conversations: int, concurrency: int
) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp, AgentChild(server.url, Path(tmp)) as agent:
        for case, (rounds, synth) in CASES.items():
            server.set_scenario(scenario_for(rounds, synth, PROFILE))
            await measure(agent.url, min(conversations, concurrency), concurrency)  # warm-up
            ideal = ideal_ms(rounds, synth, TOOL_MS)
            ideal_first = ideal - PROFILE.per_token_ms * max(0, synth - 1)
            for conc, n in ((1, max(4, conversations // 8)), (concurrency, conversations)):
                samples = await measure(agent.url, n, conc)
                ttft = [s[0] for s in samples]
                total = [s[1] for s in samples]
                rows.append(
                    {
                        "case": case,
                        "concurrency": conc,
                        "conversations": n,
                        "ideal_ttft_ms": round(ideal_first, 1),
                        "ideal_total_ms": round(ideal, 1),
                        "ttft_p50_ms": round(pct(ttft, 0.5), 1),
                        "ttft_p99_ms": round(pct(ttft, 0.99), 1),
                        "total_p50_ms": round(pct(total, 0.5), 1),
                        "total_p99_ms": round(pct(total, 0.99), 1),
                        "ttft_share_p50": round(pct(ttft, 0.5) / pct(total, 0.5), 3),
                    }
                )
                print_row(rows[-1])
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| case | concurrency | n | ideal TTFT ms | TTFT p50 ms | TTFT p99 ms | ideal total ms "
        "| total p50 ms | total p99 ms | TTFT / total (p50) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['concurrency']} | {r['conversations']} "
            f"| {r['ideal_ttft_ms']:.0f} | {r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} "
            f"| {r['ideal_total_ms']:.0f} | {r['total_p50_ms']:.0f} | {r['total_p99_ms']:.0f} "
            f"| {r['ttft_share_p50']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['case']:<24} c={r['concurrency']:<3} n={r['conversations']:<4} "
        f"TTFT ideal {r['ideal_ttft_ms']:>6.0f} p50 {r['ttft_p50_ms']:>6.0f} "
        f"p99 {r['ttft_p99_ms']:>6.0f}  total ideal {r['ideal_total_ms']:>6.0f} "
        f"p50 {r['total_p50_ms']:>6.0f} p99 {r['total_p99_ms']:>6.0f}  "
        f"TTFT/total {r['ttft_share_p50']:.3f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=48)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--out", default="bench/results/agent_ttft.json")
    args = parser.parse_args()

    async def run() -> list[dict[str, Any]]:
        from sleuth.scripted import Scenario

        with ScriptedProcess(Scenario()) as server:
            return await ttft_section(server, args.conversations, args.concurrency)

    rows = asyncio.run(run())
    machine = {"cpus": os.cpu_count(), "loadavg_1m_at_end": os.getloadavg()[0]}
    result = {"machine": machine, "ttft": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(rows), encoding="utf-8")
    print(f"wrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
