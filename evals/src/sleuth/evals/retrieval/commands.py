"""``sleuth eval retrieval``, ``sleuth eval compare`` and ``sleuth eval synth-corpus``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sleuth.evals.errors import EvalError

Handler = Callable[[argparse.Namespace], int]


def register(sub: Any, guarded: Callable[[Handler], Handler]) -> None:
    rt = sub.add_parser(
        "retrieval",
        help="context precision/recall by id, MRR, nDCG and latency of a vector_search binding "
        "(no judge)",
    )
    src = rt.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--binding",
        type=Path,
        help="ToolBinding manifest or tool service config of a vector_search tool: its "
        "retrieval knobs are what is measured (with --golden)",
    )
    src.add_argument(
        "--samples", type=Path, help="recorded rows (context_ids, reference_context_ids) to score"
    )
    rt.add_argument("--golden", type=Path, help="golden dataset (default: the shipped one)")
    rt.add_argument(
        "--qdrant-path", help="Qdrant local-mode folder (instead of the binding's store)"
    )
    rt.add_argument("--top-k", type=int, help="K passages per call (default: the binding's topK)")
    rt.add_argument("--agent", default=os.environ.get("SLEUTH_AGENT", "default"))
    rt.add_argument("--dataset", help="label 'dataset' (default: the file's stem)")
    rt.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    rt.add_argument("--final-report", action="store_true", help="allow --split test/all")
    rt.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE")
    rt.add_argument("--max-failed-rows", type=int, default=0)
    rt.add_argument("--out", type=Path, help="write the JSON result here")
    rt.add_argument("--prom", type=Path, help="write the Prometheus text exposition here")
    rt.add_argument("--pushgateway", help="push the metrics to this Pushgateway address")
    rt.add_argument("--html", type=Path, help="write the HTML report here")
    rt.add_argument("--no-progress", action="store_true")
    rt.set_defaults(func=guarded(run_retrieval))

    cp = sub.add_parser(
        "compare", help="B − A per metric, paired by row: bootstrap interval and p-value"
    )
    cp.add_argument("a", type=Path, help="result JSON of configuration A (the baseline)")
    cp.add_argument("b", type=Path, help="result JSON of configuration B")
    cp.add_argument("--metrics", help="comma-separated (default: every metric both have)")
    cp.add_argument("--resamples", type=int, default=10000)
    cp.add_argument("--confidence", type=float, default=0.95)
    cp.add_argument("--seed", type=int, default=0)
    cp.add_argument("--out", type=Path, help="write the comparison JSON here")
    cp.add_argument("--html", type=Path, help="write the comparison as an HTML page")
    cp.set_defaults(func=guarded(run_compare))

    sc = sub.add_parser(
        "synth-corpus",
        help="write the generated contracts corpus and its golden set (deterministic)",
    )
    sc.add_argument("--out", type=Path, required=True, help="folder to write")
    sc.add_argument("--documents", type=int, default=2000)
    sc.add_argument("--questions", type=int, default=300)
    sc.add_argument("--seed", type=int, default=7)
    sc.set_defaults(func=guarded(run_synth))


async def _tool_run(args: argparse.Namespace, cases: Any) -> Any:
    from sleuth.evals.retrieval.runner import run_tool
    from sleuth.tools.build import build_service_tools
    from sleuth.tools.service.config import load_spec

    spec = load_spec(args.binding, "vector_search")
    if spec.vector_search is None:
        raise EvalError(f"{args.binding}: not a vector_search ToolBinding")
    env = dict(os.environ)
    if args.qdrant_path:
        env["SLEUTH_QDRANT_PATH"] = args.qdrant_path
    k = args.top_k or spec.vector_search.top_k
    built = await build_service_tools(spec, env)
    try:
        [tool] = built.tools.values()
        run = await run_tool(cases, tool, k, progress=not args.no_progress)
    finally:
        await built.aclose()
    knobs = spec.vector_search.to_wire()
    run.config = {"binding": str(args.binding), "vectorSearch": knobs}
    return run


def run_retrieval(args: argparse.Namespace) -> int:
    from sleuth.evals.golden.cases import load_golden, shipped_golden_path
    from sleuth.evals.golden.manifest import guard_split, verify
    from sleuth.evals.report.results import (
        RunLabels,
        file_sha256,
        parse_thresholds,
        retrieval_document,
    )
    from sleuth.evals.retrieval.runner import score_rows
    from sleuth.evals.runs import emit

    guard_split(args.split, args.final_report)
    if args.samples:
        from sleuth.scoring.samples import load_samples

        rows = load_samples(args.samples, args.split)
        if not rows:
            raise EvalError(f"{args.samples}: no rows in split {args.split!r}")
        run = score_rows(rows, args.top_k)
        run.config = {"samples": str(args.samples)}
        source: Path = args.samples
    else:
        source = args.golden or shipped_golden_path()
        cases = load_golden(source, args.split)
        if not cases:
            raise EvalError(f"{source}: no cases in split {args.split!r}")
        if args.split != "dev":
            verify(load_golden(source), source)
        run = asyncio.run(_tool_run(args, cases))
    labels = RunLabels(
        args.agent, args.dataset or source.stem, args.split, dataset_sha256=file_sha256(source)
    )
    doc = retrieval_document(run, labels, parse_thresholds(args.threshold), args.max_failed_rows)
    return emit(doc, args)


def run_compare(args: argparse.Namespace) -> int:
    from sleuth.evals.compare import compare
    from sleuth.evals.report.html import render_comparison
    from sleuth.evals.report.results import read_document, write_document

    a, b = read_document(args.a), read_document(args.b)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    doc = compare(
        a, b, metrics, resamples=args.resamples, confidence=args.confidence, seed=args.seed
    )
    for warning in doc["warnings"]:
        print(warning)
    print(f"A = {args.a}, B = {args.b}; {doc['of']} on {doc['dataset']}/{doc['split']}")
    for line in doc["lines"]:
        print(line)
    if args.out:
        write_document(doc, args.out)
    if args.html:
        args.html.write_text(render_comparison(doc), encoding="utf-8")
    return 0


def run_synth(args: argparse.Namespace) -> int:
    from sleuth.evals.synth.corpus import write_corpus

    written = write_corpus(
        args.out, documents=args.documents, questions=args.questions, seed=args.seed
    )
    print(json.dumps(written, indent=2))
    return 0
