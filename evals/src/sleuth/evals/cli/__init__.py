"""``sleuth eval tsa|ragas|retrieval|compare|synth-corpus|build-golden|report``: runs, reports,
and a CI gate in the exit code.

The edge of the eval commands: the parsers, and the typed options
(:mod:`sleuth.evals.commands.options`) built from what they parsed, once; the commands
(:mod:`sleuth.evals.commands`) never see an ``argparse.Namespace``.

Exit codes: 0 every threshold met; 1 a threshold missed or more failed rows than allowed;
2 invalid input (dataset, split guard, manifest, arguments). An unreachable endpoint makes every
case or row fail, which is counted and fails the gate (1). 3 the results could not be written to
the EvalSchedule given by --status (when the eval itself would have exited 0). With --status (a
scheduled run) a missed threshold exits 0 once the part is written: the EvalSchedule's alerts
judge the scores, and a failed pod would only make the Job run everything again.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from sleuth.evals.cli.files import (
    add_build_golden,
    add_compare,
    add_report,
    add_synth_corpus,
    compare_options,
    golden_options,
    report_options,
    synth_options,
)
from sleuth.evals.cli.runs import (
    add_ragas,
    add_retrieval,
    add_tsa,
    ragas_options,
    retrieval_options,
    tsa_options,
)
from sleuth.evals.commands.options import DATASET_OPTIONS, Options

Handler = Callable[[argparse.Namespace], int]

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add ``sleuth eval`` and its commands (the ``sleuth.commands`` entry point)."""
    ev = subparsers.add_parser(
        "eval",
        help="evaluations: tsa, ragas, retrieval, compare, synth-corpus, build-golden, report",
    )
    sub = ev.add_subparsers(dest="eval_command", metavar="EVAL", required=True)
    add_tsa(sub).set_defaults(func=_command(tsa_options))
    add_ragas(sub).set_defaults(func=_command(ragas_options))
    add_build_golden(sub).set_defaults(func=_command(golden_options))
    add_retrieval(sub).set_defaults(func=_command(retrieval_options))
    add_compare(sub).set_defaults(func=_command(compare_options))
    add_synth_corpus(sub).set_defaults(func=_command(synth_options))
    add_report(sub).set_defaults(func=_command(report_options))


def _command(options: Callable[[argparse.Namespace], Options]) -> Handler:
    """The parser's ``func``: the typed options of what it parsed, then the command."""

    def func(ns: argparse.Namespace) -> int:
        return _run(options(ns))

    return func


def _run(options: Options) -> int:
    # The commands are imported here, when one runs, on purpose: sleuth.core.cli imports this
    # module for every `sleuth --help`, and the scoring commands load ragas, pandas and the
    # Kubernetes client (about 4 s of CPU; docs/evals.md, "The commands' code"), which a parser,
    # build-golden and synth-corpus never need (about 0.5 s).
    if isinstance(options, DATASET_OPTIONS):
        from sleuth.evals.commands.golden import run_dataset_command

        return run_dataset_command(options)
    from sleuth.evals.commands.dispatch import run

    return run(options)
