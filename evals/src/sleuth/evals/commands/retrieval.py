"""``sleuth eval retrieval``: a vector_search binding's retrieval over the golden questions, or
recorded rows, scored by id without a judge."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from sleuth.evals.commands.inputs import check_split, labels, this_shard
from sleuth.evals.commands.options import RetrievalOptions
from sleuth.evals.commands.reporting import emit
from sleuth.evals.errors import EvalError
from sleuth.evals.golden.cases import GoldenCase, load_golden, shipped_golden_path
from sleuth.evals.golden.manifest import verify
from sleuth.evals.rag.runner import RetrievalRun
from sleuth.evals.report.results import parse_thresholds, retrieval_document
from sleuth.evals.retrieval.runner import run_tool, score_rows
from sleuth.scoring.samples import RagSample, load_samples
from sleuth.tools.build import build_service_tools
from sleuth.tools.service.config import load_spec


def run_retrieval(options: RetrievalOptions) -> int:
    check_split(options.run)
    if options.samples:
        source = options.samples
        rows = this_shard(
            load_samples(source, options.run.split), _row_id, options.run, source, "rows"
        )
        run = score_rows(rows, options.top_k)
        run.config = {"samples": str(source)}
    else:
        source = options.golden or shipped_golden_path()
        cases = this_shard(
            load_golden(source, options.run.split), _case_id, options.run, source, "cases"
        )
        if options.run.split != "dev":
            verify(load_golden(source), source)
        run = asyncio.run(_tool_run(options, cases))
    thresholds = parse_thresholds(options.run.thresholds)
    doc = retrieval_document(
        run, labels(options.run, source), thresholds, options.run.max_failed_rows
    )
    return emit(doc, options.run.outputs)


def _case_id(case: GoldenCase) -> str:
    return case.id


def _row_id(row: RagSample) -> str:
    return row.id


async def _tool_run(options: RetrievalOptions, cases: Sequence[GoldenCase]) -> RetrievalRun:
    """Build the binding's vector_search tool in this process and ask it every case."""
    binding: Path | None = options.binding
    assert binding is not None  # argparse: --binding or --samples
    spec = load_spec(binding, "vector_search")
    if spec.vector_search is None:
        raise EvalError(f"{binding}: not a vector_search ToolBinding")
    env = dict(os.environ)
    if options.qdrant_path:
        env["SLEUTH_QDRANT_PATH"] = options.qdrant_path
    k = options.top_k or spec.vector_search.top_k
    built = await build_service_tools(spec, env)
    try:
        [tool] = built.tools.values()
        run = await run_tool(cases, tool, k, progress=options.run.progress)
    finally:
        await built.aclose()
    run.config = {"binding": str(binding), "vectorSearch": spec.vector_search.to_wire()}
    return run
