"""What traces cost a request: the agent loop with tracing off, on, and on with the collector down.

    .venv/bin/python bench/agent_tracing.py [--conversations 64] [--concurrency 16] [--rounds 3]

Also section (4) of ``bench/agent_latency.py``. The loop of ``agent_latency`` (seed latency
profile, the "2 iterations" case: sql_query then vector_search, in-process sleeping tools) runs
each conversation under an ``invoke_agent`` root span as the HTTP API does
(:class:`sleuth.agent.reqspan.RequestSpan`), in three modes, interleaved round by round (each
round starting with the next mode) so that the machine's drift falls on all of them alike:

- ``off``: no endpoint (the no-op tracer);
- ``on``: the real SDK and OTLP/HTTP exporter behind sleuth's bounded queue, exporting to a
  sink process that accepts every export (a collector that keeps up);
- ``on, collector down``: the same, the endpoint a closed port (the queue fills, spans are
  dropped and counted; the exporter retries in its thread).

Reported per mode: p50/p99 of the conversation latency, p50 against ``off``, spans exported and
dropped. Target: p50 within 1 % of ``off``.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.reqspan import RequestSpan
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.llm import OpenAIChatModel
from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.core.tracing import Tracing, TracingSettings, start_tracing
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
    measure,
    pct,
    scenario_for,
)

CASE = "2 iterations"
# A collector that keeps up: answers every POST with 200 and an empty (valid) OTLP response,
# and counts the bytes it was sent; GET / returns the count.
SINK = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
received = [0, 0]
class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        size = int(self.headers.get("content-length", 0))
        self.rfile.read(size)
        received[0] += 1
        received[1] += size
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def do_GET(self):
        body = f"{received[0]} {received[1]}".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
"""


class Mode:
    """One way of running: its tracing, its agent, and what it measured."""

    def __init__(self, name: str, url: str, endpoint: str | None) -> None:
        self.name = name
        self.dropped: Counter[str] = Counter()
        settings = TracingSettings(endpoint=endpoint, service_name="sleuth-bench")
        self.tracing: Tracing = start_tracing(settings, self._drop)
        tools = {n: BoundTool(SleepTool(n, ms / 1000), timeout_s=30) for n, ms in TOOL_MS.items()}
        model = OpenAIChatModel(url, "scripted", stream=True, timeout_s=60, tracing=self.tracing)
        runner = ToolRunner(tools, None, tracing=self.tracing)
        self.agent = Agent(model, runner, LoopSettings(max_iterations=5))
        self.model = model
        self.durations: list[float] = []
        self.spans = 0

    def _drop(self, count: int, reason: str) -> None:
        self.dropped[reason] += count

    async def one(self) -> None:
        span = RequestSpan(self.tracing, "bench", "query", {}, "scripted")
        with span.running():
            result = await self.agent.run(QUESTION)
        span.finish(result, QUESTION)
        if self.tracing.enabled:
            self.spans += 1 + len(result.trace.model_steps()) + len(result.trace.tool_calls())

    async def close(self) -> None:
        await self.model.aclose()
        await asyncio.to_thread(self.tracing.shutdown, 2.0)


@contextmanager
def otlp_sink() -> Iterator[str]:
    """The sink as a child process; yields its base URL."""
    port = free_port()
    sink = subprocess.Popen([sys.executable, "-c", SINK, str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url + "/", sink, timeout=20, name="OTLP sink")
        yield url
    finally:
        stop_process(sink)


async def tracing_section(
    server: ScriptedProcess, sink_url: str, conversations: int, concurrency: int, rounds: int
) -> list[dict[str, Any]]:
    rounds_, synth = CASES[CASE]
    server.set_scenario(scenario_for(rounds_, synth, PROFILE))
    modes = [
        Mode("off", server.url, None),
        Mode("on", server.url, sink_url + "/v1/traces"),
        Mode("on, collector down", server.url, f"http://127.0.0.1:{free_port()}/v1/traces"),
    ]
    for mode in modes:  # warm-up, discarded: connection pools, first exports
        await measure(mode.one, concurrency, concurrency)
        mode.spans = 0
        mode.dropped.clear()
    for r in range(rounds):  # each round starts with another mode
        for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:
            mode.durations += await measure(mode.one, conversations, concurrency)
    for mode in modes:
        await mode.close()
    received = _sink_counts(sink_url)
    base = pct(modes[0].durations, 0.5)
    rows = []
    for mode in modes:
        p50 = pct(mode.durations, 0.5)
        rows.append(
            {
                "mode": mode.name,
                "case": CASE,
                "concurrency": concurrency,
                "conversations": len(mode.durations),
                "ideal_ms": round(ideal_ms(rounds_, synth, TOOL_MS), 1),
                "p50_ms": round(p50, 1),
                "p99_ms": round(pct(mode.durations, 0.99), 1),
                "p50_vs_off": round(p50 / base - 1, 4),
                "spans_ended": mode.spans,
                "spans_dropped": dict(mode.dropped),
            }
        )
        print_row(rows[-1])
    rows[1]["sink_exports"], rows[1]["sink_bytes"] = received
    return rows


def _sink_counts(url: str) -> tuple[int, int]:
    import httpx

    exports, size = httpx.get(url + "/", timeout=5).text.split()
    return int(exports), int(size)


def print_row(r: dict[str, Any]) -> None:
    print(
        f"tracing {r['mode']:<20} c={r['concurrency']:<3} n={r['conversations']:<4} "
        f"p50 {r['p50_ms']:>7.1f}  p99 {r['p99_ms']:>7.1f}  vs off {r['p50_vs_off']:+.2%}  "
        f"spans {r['spans_ended']}  dropped {r['spans_dropped']}",
        flush=True,
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| tracing | case | concurrency | n | ideal ms | p50 ms | p99 ms | p50 vs off "
        "| spans ended | spans dropped |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(r["spans_dropped"].items())) or "0"
        lines.append(
            f"| {r['mode']} | {r['case']} | {r['concurrency']} | {r['conversations']} "
            f"| {r['ideal_ms']:.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} "
            f"| {r['p50_vs_off']:+.2%} | {r['spans_ended']} | {dropped} |"
        )
    return "\n".join(lines) + "\n"


async def _main(args: argparse.Namespace, sink_url: str) -> list[dict[str, Any]]:
    with ScriptedProcess() as server:
        return await tracing_section(
            server, sink_url, args.conversations, args.concurrency, args.rounds
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=64, help="per mode and round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with otlp_sink() as sink_url:
        try:
            import uvloop

            rows = uvloop.run(_main(args, sink_url))
        except ImportError:
            rows = asyncio.run(_main(args, sink_url))
    print(markdown(rows))


if __name__ == "__main__":
    main()
