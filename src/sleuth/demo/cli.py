"""``sleuth demo`` (the README's first command) and ``sleuth ask``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any

import httpx

from sleuth.agent.router import ROUTER_NAME, RouterModel
from sleuth.agent.sample.contracts import SEED_QUESTION
from sleuth.core.llm import ToolCallRequest
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.demo.render import render_trace
from sleuth.demo.stack import FIXTURE_LABEL, embedded_stack

# (title, question, tools offered, stack variant)
SCENARIOS: list[tuple[str, str, list[str] | None, str]] = [
    ("The seed's question: SQL, then documents", SEED_QUESTION, None, "up"),
    (
        "A single tool: documents only",
        "What late-delivery penalty applies in the contract with Provider B?",
        None,
        "up",
    ),
    (
        "Independent calls in one parallel round",
        "What is the copper price today, and what does our price revision clause say?",
        None,
        "up",
    ),
    (
        "web_search down: answer from internal sources and say so",
        "What is the copper price today, and what does our price revision clause say?",
        None,
        "down",
    ),
    ("Not enough evidence", "Who won the 1998 football world cup?", None, "up"),
]


def _print(text: str = "") -> None:
    print(text, flush=True)


async def _tsa_table() -> str:
    """The router's tool selection accuracy on the shipped TSA set (every split, labelled)."""
    from sleuth.evals.tsa.cases import load_cases, shipped_cases_path
    from sleuth.evals.tsa.scoring import ActualCall, score_case, summarise

    tools = [spec.to_openai() for spec in DEFAULT_SPECS.values()]
    router = RouterModel()
    results = []
    for case in load_cases(shipped_cases_path()):
        turn = await router.complete([{"role": "user", "content": case.query}], tools)
        calls = [_actual(c, ActualCall) for c in turn.tool_calls]
        results.append(score_case(case, calls, dict(DEFAULT_SPECS)))
    summary = summarise(results)
    lines = [
        f"Tool selection accuracy of the {ROUTER_NAME}",
        f"on the shipped set ({summary.cases} cases, dev and test splits; the router is not tuned "
        "on test cases):",
        "",
        f"  {'tool':<16}{'cases':>7}{'correct':>9}{'TSA':>8}",
    ]
    for tool, row in summary.per_tool.items():
        tsa = "n/a" if row["tsa"] is None else f"{row['tsa']:.2f}"
        lines.append(f"  {tool:<16}{row['cases']:>7}{row['tool_correct']:>9}{tsa:>8}")
    overall = "n/a" if summary.tsa is None else f"{summary.tsa:.2f}"
    lines.append(f"  {'overall':<16}{summary.cases:>7}{'':>9}{overall:>8}")
    flag = "below" if summary.below_threshold else "at or above"
    lines.append(f"  ({flag} the seed's 0.85 threshold)")
    lines.append(
        "  The router answers SQL questions only through named query templates; the shipped "
        "set offers free-form sql_query alone, so its SQL cases need a real model."
    )
    return "\n".join(lines)


def _actual(call: ToolCallRequest, kind: Any) -> Any:
    return kind.from_openai({"function": {"name": call.name, "arguments": call.arguments_text}})


async def _demo(args: argparse.Namespace) -> int:
    llm_url = args.llm_url or os.environ.get("SLEUTH_LLM_URL")
    planner = f"the model at {llm_url}" if llm_url else ROUTER_NAME
    _print("sleuth demo — the whole loop on embedded defaults, nothing but this machine")
    _print(f"  planner:      {planner}")
    _print("  sql_query:    PostgreSQL (pgserver wheel) with the sample contracts table")
    _print("  vector_search: Qdrant local mode, clauses embedded by all-MiniLM-L6-v2 (numpy)")
    _print(f"  web_search:   {FIXTURE_LABEL} (a SearxNG-compatible server on loopback)")
    started = time.perf_counter()
    async with embedded_stack(llm_url=llm_url, llm_model=args.llm_model) as stack:
        _print(f"  started in {time.perf_counter() - started:.1f} s")
        for n, (title, question, names, variant) in enumerate(SCENARIOS, 1):
            _print()
            _print(f"=== {n}. {title} " + "=" * max(0, 80 - len(title)))
            agent = stack.agent(names, web_down=variant == "down")
            result = await agent.run(question)
            _print(render_trace(result.trace, result.answer, result.citations))
    _print()
    _print("=== Tool selection accuracy " + "=" * 60)
    _print(await _tsa_table())
    return 0


async def _ask_embedded(args: argparse.Namespace) -> int:
    llm_url = args.llm_url or os.environ.get("SLEUTH_LLM_URL")
    async with embedded_stack(llm_url=llm_url, llm_model=args.llm_model) as stack:
        result = await stack.agent().run(args.question)
    if args.json:
        _print(
            json.dumps(
                {
                    "answer": result.answer,
                    "citations": result.citations,
                    "trace": result.trace.model_dump(by_alias=True),
                }
            )
        )
    else:
        _print(render_trace(result.trace, result.answer, result.citations))
    return 0


def _ask_remote(args: argparse.Namespace) -> int:
    url = args.url.rstrip("/") + "/v1/query"
    try:
        response = httpx.post(url, json={"question": args.question}, timeout=args.timeout)
    except httpx.HTTPError as err:
        print(f"sleuth ask: cannot reach {url}: {err}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(
            f"sleuth ask: {url} answered {response.status_code}: {response.text}", file=sys.stderr
        )
        return 1
    body = response.json()
    if args.json:
        _print(json.dumps(body))
        return 0
    from sleuth.agent.trace import Trace

    trace = Trace.model_validate(body["trace"])
    _print(render_trace(trace, body["answer"], body.get("citations", [])))
    return 0


def _add_llm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-url",
        help="an OpenAI-compatible server (vLLM, llama.cpp, ...) to plan with, e.g. "
        "http://127.0.0.1:8000/v1 (default: $SLEUTH_LLM_URL; without one, the router)",
    )
    parser.add_argument("--llm-model", default="default", help="served model name")


def register_demo(subparsers: Any) -> None:
    demo = subparsers.add_parser(
        "demo", help="run the agent on embedded defaults: the seed's question and a few more"
    )
    _add_llm(demo)
    demo.set_defaults(func=lambda a: asyncio.run(_demo(a)))


def register_ask(subparsers: Any) -> None:
    ask = subparsers.add_parser(
        "ask", help="answer one question (embedded stack, or a running agent with --url)"
    )
    ask.add_argument("question")
    ask.add_argument("--url", help="a running agent service, e.g. http://127.0.0.1:8080")
    ask.add_argument("--timeout", type=float, default=120.0, help="seconds (with --url)")
    ask.add_argument("--json", action="store_true", help="print the JSON response")
    _add_llm(ask)
    ask.set_defaults(func=lambda a: _ask_remote(a) if a.url else asyncio.run(_ask_embedded(a)))
