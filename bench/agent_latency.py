"""Agent latency benchmark: how close the loop gets to the sum of the parts it waits for.

    .venv/bin/python bench/agent_latency.py [--conversations 192] [--concurrency 64] [--quick]

The model is the scripted OpenAI-compatible server in a separate process with the seed article's
latency profile (TTFT 150 ms below 4k prompt tokens, 5 ms per further token); tools are in-process
and sleep for the seed's latencies (sql_query 50 ms, vector_search 20 ms). For every conversation
``ideal`` is the sum of the simulated parts (each model turn's TTFT + per-token time, plus for each
tool round the slowest call of the round) and ``ratio = measured / ideal``.

Sections: (1) ratio at p50/p99 with N concurrent conversations, for 1, 2, 3 iterations and the
parallel case, for sleuth and for LangGraph's prebuilt ReAct agent (same server, same tools,
same run; needs the ``bench`` extra). Each sleuth conversation makes calls of its own, as users
asking different questions do (:func:`own_calls`); the row ``sleuth, calls shared`` asks the N
identical conversations of one agent, whose identical calls in flight at once share one
execution (single-flight): those conversations leave their tool round together and hit the
model server as one burst; (2) orchestration throughput: loop iterations per CPU-second
with a zero-latency model and tools, in-process and over HTTP; (3) time to first answer token
against total latency through the agent's streamed HTTP API (``bench/agent_ttft.py``, which also
runs alone; ``--no-ttft`` skips it); (4) tracing off, on, and on with the collector down, side
by side (``bench/agent_tracing.py``, which also runs alone; ``--no-tracing`` skips it). Prints a
table and writes JSON to
``bench/results/agent_latency.json`` (and the tables as ``.md`` beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.llm import ModelTurn, OpenAIChatModel, ToolCallRequest
from sleuth.core.tools import ToolSpec
from sleuth.scripted import (
    LatencyProfile,
    Scenario,
    ScriptedProcess,
    ScriptedResponse,
    ScriptedToolCall,
    seed_latency_profile,
)
from sleuth.tools.base import ToolOutput

TOOL_MS = {"sql_query": 50.0, "vector_search": 20.0}
PROFILE = seed_latency_profile(per_token_ms=5.0)
QUESTION = "How many contracts above 100k€ did we sign in 2025 with EU providers?"
# name → (tool rounds, completion tokens of the final synthesis: 31 → 300 ms, 51 → 400, 61 → 450)
CASES: dict[str, tuple[list[list[str]], int]] = {
    "1 iteration": ([["sql_query"]], 31),
    "2 iterations": ([["sql_query"], ["vector_search"]], 51),
    "3 iterations": ([["sql_query"], ["vector_search"], ["sql_query"]], 61),
    "parallel (sql ∥ vector)": ([["sql_query", "vector_search"]], 51),
}


@dataclass
class SleepTool:
    name: str
    delay_s: float

    @property
    def spec(self) -> ToolSpec:
        props = {"query": {"type": "string"}}
        params = {"type": "object", "properties": props, "required": ["query"]}
        return ToolSpec(self.name, f"benchmark stand-in for {self.name}", params)

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return ToolOutput(content={"tool": self.name, "rows": [[47, 8300000]]})


def scenario_for(rounds: list[list[str]], synth_tokens: int, profile: LatencyProfile) -> Scenario:
    turns = [
        ScriptedResponse(
            tool_calls=[
                ScriptedToolCall(name=name, arguments={"query": f"round {r} call {i}"})
                for i, name in enumerate(names)
            ],
            completion_tokens=1,
        )
        for r, names in enumerate(rounds)
    ]
    turns.append(ScriptedResponse(content="47 contracts. " * 8, completion_tokens=synth_tokens))
    return Scenario(turns=turns, latency=profile)


def ideal_ms(rounds: list[list[str]], synth_tokens: int, tool_ms: dict[str, float]) -> float:
    model = sum(PROFILE.total_ms(0, 1) for _ in rounds) + PROFILE.total_ms(0, synth_tokens)
    return model + sum(max(tool_ms[n] for n in names) for names in rounds)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def sleuth_agent(url: str, tool_ms: dict[str, float]) -> Agent:
    tools = {n: BoundTool(SleepTool(n, ms / 1000), timeout_s=30) for n, ms in tool_ms.items()}
    model = OpenAIChatModel(url, "scripted", stream=True, timeout_s=60)
    return Agent(model, ToolRunner(tools, None), LoopSettings(max_iterations=5))


def own_calls(agent: Agent) -> Any:
    """One conversation of ``agent`` whose tool calls are its own: the same model client and
    tools, a runner of its own. Every conversation of the benchmark asks the same question, so
    with the agent's one runner their identical calls in flight at once would share one
    execution (:class:`~sleuth.core.singleflight.SingleFlight`, since 2026-12-02): the joiners
    then leave the tool round with the first caller, all at once, and the next model requests
    arrive as one burst — a property of 64 identical questions, not of the loop. Users asking
    different questions make different calls; this measures the loop as they meet it."""

    def run() -> Any:
        runner = ToolRunner(agent.runner.tools, None)
        return Agent(agent.model, runner, agent.settings).run(QUESTION)

    return run


def langgraph_agent(url: str, tool_ms: dict[str, float]) -> Any:
    from langchain_core.tools import StructuredTool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    def make(name: str, delay_s: float) -> StructuredTool:
        async def run(query: str) -> str:
            if delay_s:
                await asyncio.sleep(delay_s)
            return json.dumps({"tool": name, "rows": [[47, 8300000]]})

        return StructuredTool.from_function(
            coroutine=run, name=name, description=f"benchmark stand-in for {name}"
        )

    llm = ChatOpenAI(
        base_url=url, api_key="unused", model="scripted", streaming=True, max_retries=0
    )
    tools = [make(n, ms / 1000) for n, ms in tool_ms.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(llm, tools)


async def measure(run_one: Any, conversations: int, concurrency: int) -> list[float]:
    gate = asyncio.Semaphore(concurrency)
    durations: list[float] = []

    async def one() -> None:
        async with gate:
            start = time.perf_counter()
            await run_one()
            durations.append((time.perf_counter() - start) * 1000)

    await asyncio.gather(*(one() for _ in range(conversations)))
    return durations


async def latency_section(
    server: ScriptedProcess, conversations: int, concurrency: int, with_langgraph: bool
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    ours = sleuth_agent(server.url, TOOL_MS)
    theirs = langgraph_agent(server.url, TOOL_MS) if with_langgraph else None
    first_rounds, first_synth = next(iter(CASES.values()))
    server.set_scenario(scenario_for(first_rounds, first_synth, PROFILE))
    # Warm-up at full concurrency, discarded: fills both systems' connection pools.
    await measure(lambda: ours.run(QUESTION), concurrency, concurrency)
    if theirs is not None:
        warm = {"messages": [("user", QUESTION)]}
        await measure(lambda: theirs.ainvoke(warm), concurrency, concurrency)
    for case, (rounds, synth) in CASES.items():
        server.set_scenario(scenario_for(rounds, synth, PROFILE))
        ideal = ideal_ms(rounds, synth, TOOL_MS)
        probe = await ours.run(QUESTION)  # warm-up, and checks the script ran as intended
        assert probe.trace.iterations == len(rounds), probe.trace
        assert all(s.prompt_tokens < 4000 for s in probe.trace.model_steps())
        low = (1, max(8, conversations // 16))
        high = (concurrency, conversations)
        systems: list[tuple[str, Any, tuple[tuple[int, int], ...]]] = [
            ("sleuth", own_calls(ours), (low, high)),
            ("sleuth, calls shared", lambda: ours.run(QUESTION), (high,)),
        ]
        if theirs is not None:
            message = {"messages": [("user", QUESTION)]}
            await theirs.ainvoke(message)
            systems.append(("langgraph", lambda m=message: theirs.ainvoke(m), (low, high)))
        for system, run_one, runs in systems:
            for conc, n in runs:
                durations = await measure(run_one, n, conc)
                ratios = [d / ideal for d in durations]
                rows.append(
                    {
                        "case": case,
                        "system": system,
                        "concurrency": conc,
                        "conversations": n,
                        "ideal_ms": round(ideal, 1),
                        "p50_ms": round(pct(durations, 0.5), 1),
                        "p99_ms": round(pct(durations, 0.99), 1),
                        "ratio_p50": round(pct(ratios, 0.5), 4),
                        "ratio_p99": round(pct(ratios, 0.99), 4),
                        "overhead_p50_ms": round(pct(durations, 0.5) - ideal, 1),
                    }
                )
                print_row(rows[-1])
    await ours.model.aclose()  # type: ignore[attr-defined]
    return rows


class InProcessModel:
    """Zero-latency model in this process: turns by position, like the scripted server."""

    name = "in-process"

    def __init__(self, rounds: int) -> None:
        self.turns = [
            ModelTurn(None, (ToolCallRequest(f"c{i}", "sql_query", '{"query": "q"}'),))
            for i in range(rounds)
        ]
        self.final = ModelTurn("done")

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        k = sum(1 for m in messages if m["role"] == "assistant")
        return self.turns[k] if k < len(self.turns) else self.final


async def throughput(agent_factory: Any, rounds: int, seconds: float) -> dict[str, float]:
    agent = agent_factory()
    await agent.run(QUESTION)
    cpu0, wall0, iterations = time.process_time(), time.perf_counter(), 0
    while time.perf_counter() - wall0 < seconds:
        await agent.run(QUESTION)
        iterations += rounds
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    model = getattr(agent, "model", None)
    if model is not None and hasattr(model, "aclose"):
        await model.aclose()
    return {
        "iterations": iterations,
        "per_cpu_s": iterations / cpu,
        "per_wall_s": iterations / wall,
    }


async def throughput_section(
    server: ScriptedProcess, seconds: float, with_langgraph: bool
) -> list[dict[str, Any]]:
    zero = {"sql_query": 0.0, "vector_search": 0.0}
    rounds = 3
    runner = ToolRunner({n: BoundTool(SleepTool(n, 0)) for n in zero}, None)
    rows = [
        {
            "mode": "sleuth, in-process zero-latency model",
            **await throughput(
                lambda: Agent(InProcessModel(rounds), runner, LoopSettings()), rounds, seconds
            ),
        }
    ]
    print_tp(rows[-1])
    server.set_scenario(scenario_for([["sql_query"]] * rounds, 1, LatencyProfile()))
    rows.append(
        {
            "mode": "sleuth, scripted server over HTTP (zero latency)",
            **await throughput(lambda: sleuth_agent(server.url, zero), rounds, seconds),
        }
    )
    print_tp(rows[-1])
    if with_langgraph:
        graph = langgraph_agent(server.url, zero)

        class Wrapped:
            async def run(self, q: str) -> Any:
                return await graph.ainvoke({"messages": [("user", q)]})

        rows.append(
            {
                "mode": "langgraph, scripted server over HTTP (zero latency)",
                **await throughput(Wrapped, rounds, seconds),
            }
        )
        print_tp(rows[-1])
    return rows


def markdown(result: dict[str, Any]) -> str:
    """The tables of docs/performance.md's Agent section."""
    lines = [
        "| case | system | concurrency | n | ideal ms | p50 ms | p99 ms | ratio p50 | ratio p99 "
        "| overhead p50 ms |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["latency"]:
        lines.append(
            f"| {r['case']} | {r['system']} | {r['concurrency']} | {r['conversations']} "
            f"| {r['ideal_ms']:.0f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} "
            f"| {r['ratio_p50']:.3f} | {r['ratio_p99']:.3f} | {r['overhead_p50_ms']:.0f} |"
        )
    pairs: dict[tuple[str, int], dict[str, float]] = {}
    for r in result["latency"]:
        pairs.setdefault((r["case"], r["concurrency"]), {})[r["system"]] = r["overhead_p50_ms"]
    if any("langgraph" in v for v in pairs.values()):
        lines += [
            "",
            "| case | concurrency | sleuth overhead p50 ms | LangGraph overhead p50 ms "
            "| sleuth / LangGraph |",
            "|---|---|---|---|---|",
        ]
        for (case, conc), v in pairs.items():
            if "langgraph" in v and "sleuth" in v:
                share = v["sleuth"] / v["langgraph"] if v["langgraph"] > 0 else float("nan")
                lines.append(
                    f"| {case} | {conc} | {v['sleuth']:.0f} | {v['langgraph']:.0f} | {share:.2f} |"
                )
    lines += [
        "",
        "| orchestration, 3-iteration conversations | iterations / CPU-s | iterations / s |",
    ]
    lines.append("|---|---|---|")
    for r in result["throughput"]:
        lines.append(f"| {r['mode']} | {r['per_cpu_s']:.0f} | {r['per_wall_s']:.0f} |")
    if result.get("ttft"):
        from agent_ttft import markdown as ttft_markdown

        lines += ["", ttft_markdown(result["ttft"]).rstrip("\n")]
    if result.get("tracing"):
        from agent_tracing import markdown as tracing_markdown

        lines += ["", tracing_markdown(result["tracing"]).rstrip("\n")]
    return "\n".join(lines) + "\n"


def print_row(r: dict[str, Any]) -> None:
    print(
        f"{r['case']:<24} {r['system']:<9} c={r['concurrency']:<3} n={r['conversations']:<4} "
        f"ideal {r['ideal_ms']:>7.1f}  p50 {r['p50_ms']:>7.1f}  p99 {r['p99_ms']:>7.1f}  "
        f"ratio p50 {r['ratio_p50']:.3f}  p99 {r['ratio_p99']:.3f}  "
        f"overhead p50 {r['overhead_p50_ms']:>6.1f} ms",
        flush=True,
    )


def print_tp(r: dict[str, Any]) -> None:
    print(
        f"{r['mode']:<54} {r['per_cpu_s']:>8.0f} iterations/CPU-s "
        f"{r['per_wall_s']:>8.0f} iterations/s",
        flush=True,
    )


async def main_async(args: argparse.Namespace, sink_url: str | None) -> dict[str, Any]:
    try:
        import langgraph.prebuilt  # noqa: F401

        with_langgraph = not args.no_langgraph
    except ImportError:
        print("langgraph not installed (pip install -e '.[bench]'): sleuth only")
        with_langgraph = False
    with ScriptedProcess(Scenario()) as server:
        latency = await latency_section(
            server, args.conversations, args.concurrency, with_langgraph
        )
        tp = await throughput_section(server, args.seconds, with_langgraph)
        ttft: list[dict[str, Any]] = []
        if not args.no_ttft:
            from agent_ttft import ttft_section  # a sibling script: bench/ is sys.path[0]

            ttft = await ttft_section(server, max(16, args.conversations // 4), 16)
        tracing: list[dict[str, Any]] = []
        if sink_url is not None:
            from agent_tracing import tracing_section

            tracing = await tracing_section(server, sink_url, args.conversations // 3, 16, 3)
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "loadavg_1m_at_end": os.getloadavg()[0],
        },
        "profile": PROFILE.model_dump(),
        "tool_ms": TOOL_MS,
        "latency": latency,
        "throughput": tp,
        "ttft": ttft,
        "tracing": tracing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=192)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput run")
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument("--no-ttft", action="store_true", help="skip section (3)")
    parser.add_argument("--no-tracing", action="store_true", help="skip section (4)")
    parser.add_argument("--quick", action="store_true", help="64 conversations, 1 s runs")
    parser.add_argument("--out", default="bench/results/agent_latency.json")
    args = parser.parse_args()
    if args.quick:
        args.conversations, args.seconds = 64, 1.0
    from agent_tracing import otlp_sink  # a sibling script: bench/ is sys.path[0]

    with contextlib.ExitStack() as stack:
        sink_url = None if args.no_tracing else stack.enter_context(otlp_sink())
        try:
            import uvloop

            result = uvloop.run(main_async(args, sink_url))
        except ImportError:
            result = asyncio.run(main_async(args, sink_url))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    ratios = [r["ratio_p50"] for r in result["latency"] if r["system"] == "sleuth"]
    print(f"wrote {out}; sleuth ratio p50 median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
