"""Benchmark: tool selection accuracy of real small models, native against guided tool calling.

Serves each local model (sleuth.core.localmodel: the Qwen2.5-Coder GGUFs assembled from PyPI
wheels, llama-cpp-python's server on loopback, one generation thread) and runs the whole shipped
TSA set (every split) through the TSA runner twice: ``native`` (tools + ``tool_choice: auto``,
the server's ``tool_calls``) and ``guided`` (the JSON Schema of sleuth.core.guided, carried as
``response_format: {"type": "json_object", "schema": ...}``, the form llama-cpp-python reads).
One request at a time, temperature 0, the default tool descriptions and system prompt (nothing
tuned on the test split).

Bounded: each case has a timeout (``--timeout``) and each (model, mode) run a wall-clock budget
(``--budget-minutes``); a run cut by its budget says how many cases it scored.

    nice -n 10 .venv/bin/python bench/tsa_real_model.py --models 1.5b,0.5b --modes native,guided

Prints one table row per (model, mode) and per-tool / per-stratum TSA, each rate with its 95 %
Wilson interval (a stratum of fewer than 10 cases is marked small: its interval is wide), the
seconds and completion tokens per case (a guided reply's thought costs tokens), and writes every
case's result, the model's thought included, to ``--out`` (default
bench/results/tsa_real_model.json). ``--ids a,b`` runs only those cases, ``--strata none,parallel``
only those strata (iterating on a subset of ``dev``); ``--combine ... --split dev`` prints one
split of the union. Figures go to
docs/evals.md and docs/performance.md. A run cut by its budget is finished by another with
``--start N`` (the case to begin with, 0-based) into another file; ``--combine A.json B.json ...``
prints the table of the union (the cases of each (model, mode), each case once: from the first
file that has it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sleuth.core.localmodel import MODELS, SERVED_NAME, LocalModelServer, ServeSettings
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.evals.tsa.cases import TsaCase, load_cases, shipped_cases_path
from sleuth.evals.tsa.runner import EndpointConfig, endpoint_model, run_with_chat_model
from sleuth.evals.tsa.scoring import SMALL_STRATUM, CaseResult, summarise, wilson_interval


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _run(
    cases: list[TsaCase], cfg: EndpointConfig, budget_s: float
) -> tuple[list[CaseResult], float, int]:
    specs = list(DEFAULT_SPECS.values())
    model = endpoint_model(cfg)
    results: list[CaseResult] = []
    completion_tokens = 0
    started = time.monotonic()
    try:
        for i, case in enumerate(cases, 1):
            if time.monotonic() - started > budget_s:
                _log(f"  budget of {budget_s:.0f} s spent: {len(results)} of {len(cases)} cases")
                break
            run = await run_with_chat_model([case], specs, model, system_prompt=cfg.system_prompt)
            result = run.results[0]
            results.append(result)
            completion_tokens += run.completion_tokens
            mark = "ok" if result.tool_correct else "--"
            thought = f"  ({result.thought})" if result.thought else ""
            _log(
                f"  {i:>3}/{len(cases)} {mark} {result.seconds or 0:6.1f} s  {case.id}: "
                f"expected {result.expected_label}, got {result.predicted_label}{thought}"
            )
    finally:
        await model.aclose()
    return results, time.monotonic() - started, completion_tokens


def _commit() -> str | None:
    """The commit the run measured (with ``+dirty`` when the tree had changes), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], check=False).returncode
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _combine(paths: list[Path], split: str) -> list[dict[str, Any]]:
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for path in paths:
        for run in json.loads(path.read_text())["runs"]:
            key = (run["model"], run["mode"])
            seen = runs.setdefault(key, {"results": {}, "wall_s": 0.0, "tokens": 0})
            seen["wall_s"] += run["wall_s"]
            if seen["tokens"] is not None and "completion_tokens" in run:
                seen["tokens"] += run["completion_tokens"]
            else:  # a file written before the bench counted tokens
                seen["tokens"] = None
            for r in run["results"]:
                if split in ("all", r["split"]):
                    seen["results"].setdefault(r["id"], r)
    return [
        _row(
            model,
            mode,
            [CaseResult.from_json(r) for r in v["results"].values()],
            v["wall_s"],
            v["tokens"],
        )
        for (model, mode), v in runs.items()
    ]


def _row(
    model: str, mode: str, results: list[CaseResult], wall_s: float, completion_tokens: int | None
) -> dict[str, Any]:
    s = summarise(results)
    return {
        "model": model,
        "mode": mode,
        "cases": s.cases,
        "tsa": s.tsa,
        "tool_correct": sum(r.tool_correct for r in results),
        "argument_accuracy": s.argument_accuracy,
        "full_accuracy": s.full_accuracy,
        "malformed_replies": s.malformed_replies,
        "text_calls": s.text_calls,
        "errors": s.errors,
        "seconds_per_case": s.seconds_per_case,
        "completion_tokens": completion_tokens,
        "wall_s": wall_s,
        "per_tool": s.per_tool,
        "per_stratum": s.per_stratum,
        "results": [r.to_json() for r in results],
    }


def _rate(t: dict[str, Any]) -> str:
    """``0.63 (37/59) [0.50, 0.74]``: the rate, the counts and the 95 % Wilson interval."""
    interval = wilson_interval(t["tool_correct"], t["cases"])
    shown = f"{_fmt(t['tsa'])} ({t['tool_correct']}/{t['cases']})"
    return shown if interval is None else f"{shown} [{interval[0]:.2f}, {interval[1]:.2f}]"


def _print(rows: list[dict[str, Any]]) -> None:
    print(
        "| model | mode | cases | TSA | argument accuracy | malformed | calls as text | errors "
        "| s/case | completion tokens/case |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        spent = r.get("completion_tokens")
        tokens = spent / r["cases"] if spent is not None and r["cases"] else None
        print(
            f"| {r['model']} | {r['mode']} | {r['cases']} | {_rate(r)} "
            f"| {_fmt(r['argument_accuracy'])} "
            f"| {r['malformed_replies']} | {r['text_calls']} | {r['errors']} "
            f"| {_fmt(r['seconds_per_case'])} | {_fmt(tokens)} |"
        )
    for key in ("per_tool", "per_stratum"):
        names = sorted({n for r in rows for n in r[key]})
        print()
        print("| model | mode | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        for r in rows:
            cells = []
            for n in names:
                t = r[key].get(n)
                small = t is not None and t["cases"] < SMALL_STRATUM
                cells.append("" if t is None else _rate(t) + (" (small)" if small else ""))
            print(f"| {r['model']} | {r['mode']} | " + " | ".join(cells) + " |")
    print()
    print(
        "Rates with 95 % Wilson intervals; (small): fewer than "
        f"{SMALL_STRATUM} cases, the interval is wide."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="1.5b,0.5b")
    parser.add_argument("--modes", default="native,guided")
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--limit", type=int, default=0, help="first N cases only (0: all)")
    parser.add_argument("--start", type=int, default=0, help="begin with case N (0-based)")
    parser.add_argument("--ids", default="", help="only these case ids (comma-separated)")
    parser.add_argument("--strata", default="", help="only these strata (comma-separated)")
    parser.add_argument("--combine", type=Path, nargs="+", help="print the union of results")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per case")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--budget-minutes", type=float, default=30.0, help="per model and mode")
    parser.add_argument("--threads", type=int, default=ServeSettings.threads)
    parser.add_argument(
        "--draft-tokens", type=int, default=ServeSettings.draft_tokens, help="prompt lookup"
    )
    parser.add_argument(
        "--full-grammar",
        action="store_true",
        help="judge every token against the grammar at each step (ServeSettings.full_grammar)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/tsa_real_model.json"))
    args = parser.parse_args()
    if args.combine:
        _print(_combine(args.combine, args.split))
        return 0
    cases = load_cases(shipped_cases_path(), args.split)[args.start :]
    if args.ids:
        wanted = set(args.ids.split(","))
        cases = [c for c in cases if c.id in wanted]
    if args.strata:
        strata = set(args.strata.split(","))
        cases = [c for c in cases if c.stratum in strata]
    if args.limit:
        cases = cases[: args.limit]
    commit = _commit()  # before the run: the tree may change while it runs
    rows: list[dict[str, Any]] = []
    for key in args.models.split(","):
        settings = ServeSettings(
            threads=args.threads, draft_tokens=args.draft_tokens, full_grammar=args.full_grammar
        )
        with LocalModelServer(key, settings, log=_log) as server:
            for mode in args.modes.split(","):
                _log(f"{MODELS[key].title}, {mode} tool calling, {len(cases)} cases")
                cfg = EndpointConfig(
                    base_url=server.url,
                    model=SERVED_NAME,
                    timeout_s=args.timeout,
                    concurrency=1,
                    max_tokens=args.max_tokens,
                    tool_calling="guided" if mode == "guided" else "native",
                    guided_format="json_object",
                )
                results, wall, tokens = asyncio.run(_run(cases, cfg, args.budget_minutes * 60))
                rows.append(_row(key, mode, results, wall, tokens))
    _print(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "load_average": os.getloadavg(),
        "cases": len(cases),
        "split": args.split,
        "draft_tokens": args.draft_tokens,
        "full_grammar": args.full_grammar,
        "commit": commit,
    }
    args.out.write_text(json.dumps({"meta": meta, "runs": rows}, indent=1) + "\n")
    _log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
