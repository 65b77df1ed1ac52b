"""``sleuth eval build-golden generate|review-export|review-import|freeze|verify`` and
``sleuth eval synth-corpus``: making golden datasets.

Light on purpose: nothing here imports ragas, the reports or the Kubernetes client
(tests/evals/test_eval_layers.py), so these commands start fast."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import assert_never

from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.commands.options import (
    DatasetOptions,
    FreezeOptions,
    GenerateOptions,
    ReviewExportOptions,
    ReviewImportOptions,
    SynthOptions,
    VerifyOptions,
)
from sleuth.evals.commands.outcome import EXIT_GATE, EXIT_OK, guarded
from sleuth.evals.errors import EvalError
from sleuth.evals.golden.builder import GeneratorConfig, build
from sleuth.evals.golden.cases import load_golden
from sleuth.evals.golden.corpus import Chunk, load_chunks_jsonl, load_folder, load_qdrant
from sleuth.evals.golden.manifest import freeze, verify
from sleuth.evals.golden.review import export_csv, import_verdicts, review_sample
from sleuth.evals.synth.corpus import write_corpus


def run_dataset_command(options: DatasetOptions) -> int:
    """Run the dataset command ``options`` are for, guarded (bad input: exit 2, one line)."""
    match options:
        case GenerateOptions():
            return guarded(partial(run_generate, options))
        case ReviewExportOptions():
            return guarded(partial(run_review_export, options))
        case ReviewImportOptions():
            return guarded(partial(run_review_import, options))
        case FreezeOptions():
            return guarded(partial(run_freeze, options))
        case VerifyOptions():
            return guarded(partial(run_verify, options))
        case SynthOptions():
            return guarded(partial(run_synth, options))
        case _:
            assert_never(options)


def run_generate(options: GenerateOptions) -> int:
    """Generate cases from a corpus; exit 1 when some chunks failed."""
    chunks = _chunks(options)
    if not chunks:
        raise EvalError("the corpus has no chunks")
    cfg = GeneratorConfig(
        base_url=options.endpoint,
        model=options.model,
        concurrency=options.concurrency,
        seeds=options.seeds,
        questions_per_chunk=options.questions_per_chunk,
        multi_hop=options.multi_hop,
        adversarial=options.adversarial,
        test_percent=options.test_percent,
    )
    report = asyncio.run(build(chunks, cfg, progress=options.progress))
    dump_jsonl(report.cases, options.out)
    by = {
        s: sum(1 for c in report.cases if c.stratum == s)
        for s in ("easy", "multi-hop", "adversarial")
    }
    print(
        f"wrote {len(report.cases)} cases to {options.out} {by}; "
        f"tokens {report.prompt_tokens + report.completion_tokens}"
    )
    for f in report.failed:
        print(f"  failed: {f}")
    return EXIT_OK if not report.failed else EXIT_GATE


def _chunks(options: GenerateOptions) -> list[Chunk]:
    if options.folder:
        return load_folder(options.folder)
    if options.chunks:
        return load_chunks_jsonl(options.chunks)
    assert options.qdrant is not None  # argparse: one of --folder, --chunks, --qdrant
    return load_qdrant(options.qdrant, options.collection)


def run_review_export(options: ReviewExportOptions) -> int:
    sample = review_sample(load_golden(options.dataset), options.fraction)
    export_csv(sample, options.out)
    print(f"wrote {len(sample)} cases for review to {options.out}")
    return EXIT_OK


def run_review_import(options: ReviewImportOptions) -> int:
    kept, counts = import_verdicts(load_golden(options.dataset), options.verdicts)
    dump_jsonl(kept, options.out or options.dataset)
    print(f"kept {len(kept)} cases; {counts}")
    return EXIT_OK


def run_freeze(options: FreezeOptions) -> int:
    print(f"wrote {freeze(load_golden(options.dataset), options.dataset)}")
    return EXIT_OK


def run_verify(options: VerifyOptions) -> int:
    doc = verify(load_golden(options.dataset), options.dataset)
    print(f"{options.dataset}: matches its manifest {doc['counts']}")
    return EXIT_OK


def run_synth(options: SynthOptions) -> int:
    """The generated contracts corpus and its frozen golden set (deterministic by seed)."""
    written = write_corpus(
        options.out, documents=options.documents, questions=options.questions, seed=options.seed
    )
    print(json.dumps(written, indent=2))
    return EXIT_OK
