"""The parsers of the commands on files, ``sleuth eval build-golden|compare|synth-corpus|report``,
and their options."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sleuth.evals.cli.shared import add_trace_url_option, outputs
from sleuth.evals.commands.options import (
    CompareOptions,
    FreezeOptions,
    GenerateOptions,
    Options,
    ReportOptions,
    ReviewExportOptions,
    ReviewImportOptions,
    SynthOptions,
    VerifyOptions,
)


def add_build_golden(sub: Any) -> argparse.ArgumentParser:
    """``build-golden`` and its steps; the step's options come from :func:`golden_options`."""
    gb: argparse.ArgumentParser = sub.add_parser(
        "build-golden", help="build, review and freeze a golden dataset"
    )
    gsub = gb.add_subparsers(dest="golden_command", metavar="STEP", required=True)
    gen = gsub.add_parser("generate", help="generate cases from a corpus")
    corpus = gen.add_mutually_exclusive_group(required=True)
    corpus.add_argument("--folder", type=Path, help="folder of .md/.txt files")
    corpus.add_argument("--chunks", type=Path, help="JSONL of chunks {id, text, source, ...}")
    corpus.add_argument("--qdrant", help="Qdrant URL or local path (with --collection)")
    gen.add_argument("--collection", default="documents")
    gen.add_argument("--endpoint", required=True, help="generator LLM base URL")
    gen.add_argument("--model", required=True)
    gen.add_argument("--seeds", type=int, default=50)
    gen.add_argument("--questions-per-chunk", type=int, default=2)
    gen.add_argument("--multi-hop", type=int, default=10)
    gen.add_argument("--adversarial", type=int, default=10)
    gen.add_argument("--test-percent", type=int, default=30)
    gen.add_argument("--concurrency", type=int, default=4)
    gen.add_argument("--out", type=Path, required=True)
    gen.add_argument("--no-progress", action="store_true")
    exp = gsub.add_parser("review-export", help="export a 10-20 %% sample as CSV for humans")
    exp.add_argument("dataset", type=Path)
    exp.add_argument("--fraction", type=float, default=0.15)
    exp.add_argument("--out", type=Path, required=True)
    imp = gsub.add_parser("review-import", help="apply accept/reject verdicts, drop rejects")
    imp.add_argument("dataset", type=Path)
    imp.add_argument("--verdicts", type=Path, required=True)
    imp.add_argument("--out", type=Path, help="default: rewrite the dataset in place")
    frz = gsub.add_parser("freeze", help="record the split manifest (content hash + checksum)")
    frz.add_argument("dataset", type=Path)
    ver = gsub.add_parser("verify", help="check a dataset against its manifest")
    ver.add_argument("dataset", type=Path)
    return gb


def golden_options(ns: argparse.Namespace) -> Options:
    """The options of the ``build-golden`` step named on the command line."""
    step: str = ns.golden_command
    if step == "generate":
        return GenerateOptions(
            endpoint=ns.endpoint,
            model=ns.model,
            out=ns.out,
            folder=ns.folder,
            chunks=ns.chunks,
            qdrant=ns.qdrant,
            collection=ns.collection,
            seeds=ns.seeds,
            questions_per_chunk=ns.questions_per_chunk,
            multi_hop=ns.multi_hop,
            adversarial=ns.adversarial,
            test_percent=ns.test_percent,
            concurrency=ns.concurrency,
            progress=not ns.no_progress,
        )
    if step == "review-export":
        return ReviewExportOptions(dataset=ns.dataset, out=ns.out, fraction=ns.fraction)
    if step == "review-import":
        return ReviewImportOptions(dataset=ns.dataset, verdicts=ns.verdicts, out=ns.out)
    if step == "freeze":
        return FreezeOptions(dataset=ns.dataset)
    return VerifyOptions(dataset=ns.dataset)


def add_compare(sub: Any) -> argparse.ArgumentParser:
    cp: argparse.ArgumentParser = sub.add_parser(
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
    return cp


def compare_options(ns: argparse.Namespace) -> CompareOptions:
    metrics = tuple(m.strip() for m in ns.metrics.split(",") if m.strip()) if ns.metrics else None
    return CompareOptions(
        a=ns.a,
        b=ns.b,
        metrics=metrics,
        resamples=ns.resamples,
        confidence=ns.confidence,
        seed=ns.seed,
        out=ns.out,
        html=ns.html,
    )


def add_synth_corpus(sub: Any) -> argparse.ArgumentParser:
    sc: argparse.ArgumentParser = sub.add_parser(
        "synth-corpus",
        help="write the generated contracts corpus and its golden set (deterministic)",
    )
    sc.add_argument("--out", type=Path, required=True, help="folder to write")
    sc.add_argument("--documents", type=int, default=2000)
    sc.add_argument("--questions", type=int, default=300)
    sc.add_argument("--seed", type=int, default=7)
    return sc


def synth_options(ns: argparse.Namespace) -> SynthOptions:
    return SynthOptions(out=ns.out, documents=ns.documents, questions=ns.questions, seed=ns.seed)


def add_report(sub: Any) -> argparse.ArgumentParser:
    rp: argparse.ArgumentParser = sub.add_parser(
        "report", help="HTML / Prometheus from result JSON files"
    )
    rp.add_argument("results", type=Path, nargs="+")
    rp.add_argument("--html", type=Path)
    add_trace_url_option(rp)
    rp.add_argument("--prom", type=Path)
    rp.add_argument("--pushgateway")
    rp.add_argument(
        "--merge", action="store_true", help="the files are shards of one run: merge them"
    )
    rp.add_argument("--out", type=Path, help="with --merge: write the merged JSON result")
    return rp


def report_options(ns: argparse.Namespace) -> ReportOptions:
    return ReportOptions(results=tuple(ns.results), outputs=outputs(ns), merge=ns.merge)
