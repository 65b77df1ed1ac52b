"""The loop's own overhead, two (or more) versions side by side: which commit added latency.

    .venv/bin/python bench/agent_overhead_ab.py --side old=dfbcb7a --side new=. [--rounds 6]

Each ``--side NAME=REV`` is a git revision, exported with ``git archive`` into a temporary
folder (``.`` is this checkout as it is on disk, uncommitted changes included). The sides run
one after the other, round after round, in an order that alternates (A B, B A, A B, ...), so
that a machine whose load drifts — a shared one is never idle — weighs on every side alike. Each
run is a fresh child process whose ``PYTHONPATH`` puts that side's ``*/src`` trees first, so
the loop, the model client *and* the scripted model server it starts are that side's code; it
uses that side's own ``bench/agent_latency.py`` (its scenarios, ideal and measurement), so the
figures are those of docs/performance.md's Agent table: ratio = measured / ideal per
conversation, p50 over ``--conversations`` conversations at ``--concurrency``, after a
discarded warm-up round. Conversations make calls of their own (``agent_latency.own_calls``)
where that side's benchmark has it; ``--side NAME=REV+shared`` (or ``--shared``, for every
side) runs that side's conversations through the agent's one tool runner, where identical calls
in flight share one execution — ``--side own=. --side shared=.+shared`` is the same code with
and without shared calls.

Printed per case: each side's p50 ratio (median over rounds, and the range), the paired
difference from the first side (median over rounds), its CPU per conversation (the child's
process time over the measured conversations: the agent side only, the scripted server is
another process), and the load average around the rounds. Writes JSON to
``bench/results/agent_overhead_ab.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = "+shared"  # a side REV+shared: that side's conversations share the agent's one runner


def export(rev: str, into: Path) -> Path:
    """A tree of ``rev`` (``.``: this checkout itself)."""
    if rev == ".":
        return ROOT
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def pythonpath(tree: Path) -> str:
    return os.pathsep.join(str(p) for p in sorted(tree.glob("*/src")))


def run_side(tree: Path, shared: bool, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": pythonpath(tree)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree)]
    cmd += ["--conversations", str(args.conversations), "--concurrency", str(args.concurrency)]
    for case in args.case or []:
        cmd += ["--case", case]
    if shared or args.shared:
        cmd.append("--shared")
    done = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"side {tree} failed:\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def child_async(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(tree / "bench"))
    import agent_latency as al  # that side's own benchmark

    from sleuth.scripted import Scenario, ScriptedProcess

    out: dict[str, Any] = {}
    with ScriptedProcess(Scenario()) as server:
        ours = al.sleuth_agent(server.url, al.TOOL_MS)
        first_rounds, first_synth = next(iter(al.CASES.values()))
        server.set_scenario(al.scenario_for(first_rounds, first_synth, al.PROFILE))
        # Conversations with calls of their own where that side's benchmark has them (since
        # single-flight: agent_latency.own_calls); before it, every conversation's calls were
        # its own anyway. --shared: the one runner of the agent, whatever the side.
        own = getattr(al, "own_calls", None)
        run_one = (lambda: ours.run(al.QUESTION)) if args.shared or own is None else own(ours)
        await al.measure(run_one, args.concurrency, args.concurrency)
        for case, (rounds, synth) in al.CASES.items():
            if args.case and case not in args.case:
                continue
            server.set_scenario(al.scenario_for(rounds, synth, al.PROFILE))
            ideal = al.ideal_ms(rounds, synth, al.TOOL_MS)
            await ours.run(al.QUESTION)
            cpu = time.process_time()
            durations = await al.measure(run_one, args.conversations, args.concurrency)
            cpu = time.process_time() - cpu
            ratios = [d / ideal for d in durations]
            out[case] = {
                "p50": al.pct(ratios, 0.5),
                "p99": al.pct(ratios, 0.99),
                "cpu_ms": cpu / args.conversations * 1000,
            }
        await ours.model.aclose()
    return out


def child(tree: Path, args: argparse.Namespace) -> None:
    try:
        import uvloop

        result = uvloop.run(child_async(tree, args))
    except ImportError:
        result = asyncio.run(child_async(tree, args))
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--side", action="append", default=[], help="NAME=REV[+shared] (REV . = here)"
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--conversations", type=int, default=192)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument(
        "--shared", action="store_true", help="every side: the agent's one runner (calls shared)"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", default="bench/results/agent_overhead_ab.json")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args)
        return
    sides = [s.split("=", 1) for s in args.side or ["old=dfbcb7a", "new=."]]
    shared = {name for name, rev in sides if rev.endswith(SHARED)}
    with tempfile.TemporaryDirectory(prefix="overhead-ab-") as tmp:
        trees = {name: export(rev.removesuffix(SHARED), Path(tmp) / name) for name, rev in sides}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        loads: list[float] = [os.getloadavg()[0]]
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(reversed(trees))
            for name in order:
                runs[name].append(run_side(trees[name], name in shared, args))
                loads.append(os.getloadavg()[0])
            line = "  ".join(
                f"{n}: " + " ".join(f"{v['p50']:.3f}" for v in runs[n][-1].values()) for n in trees
            )
            print(f"round {r + 1}/{args.rounds} (load {loads[-1]:.1f})  {line}", flush=True)
    report = summarize(runs, loads, sides)
    print(report["table"])
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**report, "runs": runs, "args": vars(args)}, indent=1, default=str))


def summarize(
    runs: dict[str, list[dict[str, Any]]], loads: list[float], sides: list[list[str]]
) -> dict[str, Any]:
    names = list(runs)
    first = names[0]
    cases = list(runs[first][0])
    lines = [
        f"{len(runs[first])} rounds; load average (1 min) {min(loads):.1f}-{max(loads):.1f} "
        f"(median {statistics.median(loads):.1f}); sides: "
        + ", ".join(f"{n}={rev}" for n, rev in sides),
        "",
        "| case | side | p50 ratio (median) | range | p99 ratio (median) | p50 − "
        f"{first} (paired median) | CPU ms / conversation |",
        "|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    for case in cases:
        for name in names:
            p50s = [run[case]["p50"] for run in runs[name]]
            paired = [
                a[case]["p50"] - b[case]["p50"]
                for a, b in zip(runs[name], runs[first], strict=True)
            ]
            row = {
                "p50": statistics.median(p50s),
                "min": min(p50s),
                "max": max(p50s),
                "p99": statistics.median(run[case]["p99"] for run in runs[name]),
                "minus_first": statistics.median(paired),
                "cpu_ms": statistics.median(run[case]["cpu_ms"] for run in runs[name]),
            }
            summary.setdefault(case, {})[name] = row
            lines.append(
                f"| {case} | {name} | {row['p50']:.3f} | {row['min']:.3f}–{row['max']:.3f} "
                f"| {row['p99']:.3f} | {row['minus_first']:+.3f} | {row['cpu_ms']:.2f} |"
            )
    return {"summary": summary, "loads": loads, "table": "\n".join(lines)}


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
