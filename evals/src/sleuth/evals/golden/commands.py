"""``sleuth eval build-golden generate|review-export|review-import|freeze|verify``."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sleuth.evals.errors import EvalError

EXIT_OK, EXIT_GATE = 0, 1

Handler = Callable[[argparse.Namespace], int]


def register(sub: Any, guarded: Callable[[Handler], Handler]) -> None:
    """Add ``build-golden`` and its steps to the ``sleuth eval`` subparsers."""
    gb = sub.add_parser("build-golden", help="build, review and freeze a golden dataset")
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
    gen.set_defaults(func=guarded(_golden_generate))
    exp = gsub.add_parser("review-export", help="export a 10-20 %% sample as CSV for humans")
    exp.add_argument("dataset", type=Path)
    exp.add_argument("--fraction", type=float, default=0.15)
    exp.add_argument("--out", type=Path, required=True)
    exp.set_defaults(func=guarded(_golden_export))
    imp = gsub.add_parser("review-import", help="apply accept/reject verdicts, drop rejects")
    imp.add_argument("dataset", type=Path)
    imp.add_argument("--verdicts", type=Path, required=True)
    imp.add_argument("--out", type=Path, help="default: rewrite the dataset in place")
    imp.set_defaults(func=guarded(_golden_import))
    frz = gsub.add_parser("freeze", help="record the split manifest (content hash + checksum)")
    frz.add_argument("dataset", type=Path)
    frz.set_defaults(func=guarded(_golden_freeze))
    ver = gsub.add_parser("verify", help="check a dataset against its manifest")
    ver.add_argument("dataset", type=Path)
    ver.set_defaults(func=guarded(_golden_verify))


def _golden_generate(args: argparse.Namespace) -> int:
    from sleuth.core.jsonl import dump_jsonl
    from sleuth.evals.golden.builder import GeneratorConfig, build
    from sleuth.evals.golden.corpus import load_chunks_jsonl, load_folder, load_qdrant

    if args.folder:
        chunks = load_folder(args.folder)
    elif args.chunks:
        chunks = load_chunks_jsonl(args.chunks)
    else:
        chunks = load_qdrant(args.qdrant, args.collection)
    if not chunks:
        raise EvalError("the corpus has no chunks")
    cfg = GeneratorConfig(
        base_url=args.endpoint,
        model=args.model,
        concurrency=args.concurrency,
        seeds=args.seeds,
        questions_per_chunk=args.questions_per_chunk,
        multi_hop=args.multi_hop,
        adversarial=args.adversarial,
        test_percent=args.test_percent,
    )
    report = asyncio.run(build(chunks, cfg, progress=not args.no_progress))
    dump_jsonl(report.cases, args.out)
    by = {
        s: sum(1 for c in report.cases if c.stratum == s)
        for s in ("easy", "multi-hop", "adversarial")
    }
    print(
        f"wrote {len(report.cases)} cases to {args.out} {by}; "
        f"tokens {report.prompt_tokens + report.completion_tokens}"
    )
    for f in report.failed:
        print(f"  failed: {f}")
    return EXIT_OK if not report.failed else EXIT_GATE


def _golden_export(args: argparse.Namespace) -> int:
    from sleuth.evals.golden.cases import load_golden
    from sleuth.evals.golden.review import export_csv, review_sample

    sample = review_sample(load_golden(args.dataset), args.fraction)
    export_csv(sample, args.out)
    print(f"wrote {len(sample)} cases for review to {args.out}")
    return EXIT_OK


def _golden_import(args: argparse.Namespace) -> int:
    from sleuth.core.jsonl import dump_jsonl
    from sleuth.evals.golden.cases import load_golden
    from sleuth.evals.golden.review import import_verdicts

    kept, counts = import_verdicts(load_golden(args.dataset), args.verdicts)
    dump_jsonl(kept, args.out or args.dataset)
    print(f"kept {len(kept)} cases; {counts}")
    return EXIT_OK


def _golden_freeze(args: argparse.Namespace) -> int:
    from sleuth.evals.golden.cases import load_golden
    from sleuth.evals.golden.manifest import freeze

    print(f"wrote {freeze(load_golden(args.dataset), args.dataset)}")
    return EXIT_OK


def _golden_verify(args: argparse.Namespace) -> int:
    from sleuth.evals.golden.cases import load_golden
    from sleuth.evals.golden.manifest import verify

    doc = verify(load_golden(args.dataset), args.dataset)
    print(f"{args.dataset}: matches its manifest {doc['counts']}")
    return EXIT_OK
