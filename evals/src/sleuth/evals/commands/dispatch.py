"""Options in, exit code out: the command of each options type, run guarded
(:func:`~sleuth.evals.commands.outcome.guarded`)."""

from __future__ import annotations

from functools import partial
from typing import assert_never

from sleuth.evals.commands.golden import run_dataset_command
from sleuth.evals.commands.options import (
    CompareOptions,
    FreezeOptions,
    GenerateOptions,
    Options,
    RagasOptions,
    ReportOptions,
    RetrievalOptions,
    ReviewExportOptions,
    ReviewImportOptions,
    SynthOptions,
    TsaOptions,
    VerifyOptions,
)
from sleuth.evals.commands.outcome import guarded
from sleuth.evals.commands.ragas import run_ragas
from sleuth.evals.commands.reporting import StatusReport
from sleuth.evals.commands.results import run_compare, run_report
from sleuth.evals.commands.retrieval import run_retrieval
from sleuth.evals.commands.tsa import run_tsa


def run(options: Options) -> int:
    """Run the command ``options`` are for. Only ``tsa`` and ``ragas`` report to ``--status``."""
    match options:
        case TsaOptions():
            report = StatusReport(options.status, "tsa", options.run.shard)
            return guarded(partial(run_tsa, options, report), report)
        case RagasOptions():
            report = StatusReport(options.status, "ragas", options.run.shard)
            return guarded(partial(run_ragas, options, report), report)
        case RetrievalOptions():
            return guarded(partial(run_retrieval, options))
        case CompareOptions():
            return guarded(partial(run_compare, options))
        case ReportOptions():
            return guarded(partial(run_report, options))
        case (
            GenerateOptions()
            | ReviewExportOptions()
            | ReviewImportOptions()
            | FreezeOptions()
            | VerifyOptions()
            | SynthOptions()
        ):
            return run_dataset_command(options)
        case _:
            assert_never(options)
