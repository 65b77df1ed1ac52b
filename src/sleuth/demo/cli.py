"""``sleuth demo`` (the README's first command) and ``sleuth ask``.

The planner is the router unless a model is named: ``--llm-url`` (any OpenAI-compatible server)
or ``--planner local`` (a Qwen2.5-Coder GGUF from PyPI wheels served here by llama-cpp-python,
:mod:`sleuth.core.localmodel`, with guided tool calling and progress on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx

from sleuth.agent.router import ROUTER_NAME, RouterModel
from sleuth.agent.trace import Trace
from sleuth.core.llm import ToolCallRequest
from sleuth.core.localmodel import DEFAULT_MODEL, MODELS, SERVED_NAME, LocalModelServer
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.demo.render import render_trace
from sleuth.demo.stack import FIXTURE_LABEL, Planner, embedded_stack
from sleuth.evals.tsa.cases import load_cases, shipped_cases_path
from sleuth.evals.tsa.scoring import ActualCall, score_case, summarise
from sleuth.tools.sample.contracts import SEED_QUESTION

REAL_MODEL_COMMAND = f'make local-model && .venv/bin/sleuth ask --planner local "{SEED_QUESTION}"'

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
    tools = [spec.to_openai() for spec in DEFAULT_SPECS.values()]
    router = RouterModel()
    results = []
    for case in load_cases(shipped_cases_path()):
        turn = await router.complete([{"role": "user", "content": case.query}], tools)
        calls = [_actual(c) for c in turn.tool_calls]
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


def _actual(call: ToolCallRequest) -> ActualCall:
    return ActualCall.from_openai(
        {"function": {"name": call.name, "arguments": call.arguments_text}}
    )


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _planner(args: argparse.Namespace) -> Iterator[Planner]:
    """The planner the flags choose; with ``--planner local`` its server runs meanwhile."""
    local = args.planner == "local"
    llm_url = None if args.planner == "router" else args.llm_url or os.environ.get("SLEUTH_LLM_URL")
    base = Planner(
        url=llm_url,
        model=args.llm_model,
        tool_calling=args.tool_calling or ("guided" if local else "native"),
        model_timeout_s=args.model_timeout,
        request_timeout_s=args.request_timeout,
    )
    if not local:
        yield base
        return
    title = MODELS[args.local_model].title
    _log(f"planner: {title}, {base.tool_calling} tool calling (on a CPU: be patient)")
    with LocalModelServer(args.local_model, log=_log) as server:
        # json_object: the form of the schema that llama-cpp-python's server reads
        yield replace(
            base, url=server.url, model=SERVED_NAME, guided_format="json_object", progress=True
        )


def _planner_label(planner: Planner) -> str:
    if planner.url is None:
        return ROUTER_NAME
    return f"the model at {planner.url} ({planner.tool_calling} tool calling)"


async def _demo(args: argparse.Namespace) -> int:
    with _planner(args) as planner:
        return await _demo_with(planner)


async def _demo_with(planner: Planner) -> int:
    _print("sleuth demo — the whole loop on embedded defaults, nothing but this machine")
    _print(f"  planner:      {_planner_label(planner)}")
    _print("  sql_query:    PostgreSQL (pgserver wheel) with the sample contracts table")
    _print("  vector_search: Qdrant local mode, clauses embedded by all-MiniLM-L6-v2 (numpy)")
    _print(f"  web_search:   {FIXTURE_LABEL} (a SearxNG-compatible server on loopback)")
    started = time.perf_counter()
    async with embedded_stack(planner) as stack:
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
    if planner.url is None:
        _print()
        _print("The same loop with a real model on this CPU (Qwen2.5-Coder-1.5B from PyPI wheels,")
        _print("guided tool calling; about a minute or two per question on 2 cores):")
        _print(f"  {REAL_MODEL_COMMAND}")
    return 0


def _ask_embedded(args: argparse.Namespace) -> int:
    with _planner(args) as planner:
        return asyncio.run(_ask_with(planner, args))


async def _ask_with(planner: Planner, args: argparse.Namespace) -> int:
    async with embedded_stack(planner) as stack:
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
    trace = Trace.model_validate(body["trace"])
    _print(render_trace(trace, body["answer"], body.get("citations", [])))
    return 0


def _add_llm(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--planner",
        choices=["router", "local"],
        help="router: the deterministic router, no model; local: a small real model served "
        "here (needs the sleuth[local-model] extra; see --local-model). Default: the model at "
        "--llm-url when one is given, else the router",
    )
    parser.add_argument(
        "--local-model",
        choices=sorted(MODELS),
        default=DEFAULT_MODEL,
        help=f"with --planner local: which model (default {DEFAULT_MODEL}; 0.5b is faster and "
        "worse)",
    )
    parser.add_argument(
        "--llm-url",
        help="an OpenAI-compatible server (vLLM, llama.cpp, ...) to plan with, e.g. "
        "http://127.0.0.1:8000/v1 (default: $SLEUTH_LLM_URL; without one, the router)",
    )
    parser.add_argument("--llm-model", default="default", help="served model name")
    parser.add_argument(
        "--tool-calling",
        choices=["native", "guided"],
        help="native: the server's tool_calls; guided: a JSON Schema forces the call format "
        "(for servers without a tool-call parser). Default: guided with --planner local, else "
        "native",
    )
    parser.add_argument(
        "--model-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="one model call (default 300: a 1.5B model on 2 CPU cores needs ~25 s to read its "
        "first prompt)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="one whole question, every model turn and tool call (default 900)",
    )


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
    ask.set_defaults(func=lambda a: _ask_remote(a) if a.url else _ask_embedded(a))
