"""``sleuth eval ragas``: the RAGAS metrics of recorded rows, or of the agent's answers to the
golden questions, scored by an on-premises judge; traced when the ``OTEL_*`` variables say so
(:mod:`sleuth.evals.tracing`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from sleuth.core.tracing import TracingSettings, start_tracing
from sleuth.evals.commands.inputs import check_split, labels, this_shard
from sleuth.evals.commands.options import RagasOptions
from sleuth.evals.commands.reporting import StatusReport, emit
from sleuth.evals.errors import EvalError
from sleuth.evals.golden.cases import GoldenCase, load_golden
from sleuth.evals.golden.manifest import check_rows_against_golden, verify
from sleuth.evals.rag.collect import collect, write_records
from sleuth.evals.rag.runner import Failure, RagRun, run_metrics
from sleuth.evals.report.results import parse_thresholds, ragas_document
from sleuth.evals.tracing import EVAL_SERVICE, EvalTrace
from sleuth.scoring.judge import JudgeConfig, build_judge
from sleuth.scoring.samples import RagSample, load_samples


def run_ragas(options: RagasOptions, report: StatusReport) -> int:
    """The run inside its trace span (tracing off without an ``OTEL_*`` endpoint)."""
    tracing = start_tracing(TracingSettings.from_env(os.environ, EVAL_SERVICE))
    trace = EvalTrace(tracing)
    source = options.golden if options.agent_url else options.samples
    span_labels = {
        "agent": options.run.agent,
        "dataset": options.run.dataset or (Path(source).stem if source else ""),
        "split": options.run.split,
        "run_id": report.run_id or "",
    }
    try:
        with trace.run("ragas", span_labels):
            return _ragas(options, report, trace)
    finally:
        tracing.shutdown()


def _ragas(options: RagasOptions, report: StatusReport, trace: EvalTrace) -> int:
    check_split(options.run)
    if options.agent_url:
        rows, failures, source = _from_agent(options, options.agent_url, trace)
    else:
        rows, source = _from_samples(options)
        failures = []
    thresholds = parse_thresholds(options.run.thresholds)
    run = asyncio.run(_score(options, rows, trace))
    run.failures = sorted([*failures, *run.failures], key=lambda f: (f.row_id, f.metric))
    doc = ragas_document(run, labels(options.run, source), thresholds, options.run.max_failed_rows)
    return emit(doc, options.run.outputs, report)


def _case_id(case: GoldenCase) -> str:
    return case.id


def _row_id(row: RagSample) -> str:
    return row.id


def _from_agent(
    options: RagasOptions, agent_url: str, trace: EvalTrace
) -> tuple[list[RagSample], list[Failure], Path]:
    """Ask the agent every golden question of the split (and shard); its answers are the rows."""
    golden = options.golden
    if not golden or options.samples:
        raise EvalError("--agent-url needs --golden (the questions) and no --samples")
    cases = this_shard(
        load_golden(golden, options.run.split), _case_id, options.run, golden, "cases"
    )
    if options.run.split != "dev":
        verify(load_golden(golden), golden)
    trace.asking(len(cases))
    collected = asyncio.run(
        collect(
            cases,
            agent_url,
            concurrency=options.client.concurrency,
            timeout_s=options.client.timeout_s,
            progress=options.run.progress,
            trace=trace,
            credential=options.agent_credential,
        )
    )
    if options.record:
        write_records(collected.records, options.record)
    return collected.rows, collected.failures, golden


def _from_samples(options: RagasOptions) -> tuple[list[RagSample], Path]:
    """Recorded rows of the split (and shard), checked against ``--golden`` when given."""
    if not options.samples:
        raise EvalError("give --samples rows, or --golden with --agent-url")
    samples = options.samples
    rows = this_shard(
        load_samples(samples, options.run.split), _row_id, options.run, samples, "rows"
    )
    if options.golden:
        check_rows_against_golden([(r.id, r.split) for r in rows], options.golden)
    return rows, samples


async def _score(options: RagasOptions, rows: Sequence[RagSample], trace: EvalTrace) -> RagRun:
    judge = options.judge
    cfg = JudgeConfig(
        base_url=judge.url,
        model=judge.model,
        api_key=options.client.api_key,
        timeout_s=options.client.timeout_s,
        concurrency=options.client.concurrency,
        max_tokens=judge.max_tokens,
        client=judge.client,
        embeddings_base_url=judge.embeddings_url,
        embeddings_model=judge.embeddings_model,
        embeddings_api_key=judge.embeddings_api_key,
    )
    bundle = build_judge(cfg)
    try:
        return await run_metrics(
            rows,
            list(options.metrics),
            bundle,
            strictness=options.strictness,
            progress=options.run.progress,
            trace=trace,
        )
    finally:
        await bundle.aclose()
