"""Options several ``sleuth eval`` commands share: their parsers and their typed form."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from sleuth.evals.commands.options import ClientOptions, Outputs, RunOptions, StatusOptions
from sleuth.evals.report.html import check_trace_url
from sleuth.evals.status import EXPECT_PARTS_ENV, RUN_ID_ENV, STATUS_ENV, StatusTarget

TRACE_URL_ENV = "SLEUTH_EVAL_TRACE_URL_TEMPLATE"


def add_run_options(p: argparse.ArgumentParser, *, scheduled: bool) -> None:
    """Labels, split, gate and outputs of a scoring run. ``scheduled`` (tsa, ragas): also what
    an EvalSchedule's CronJob passes (trace links, shard, client, ``--status``)."""
    p.add_argument(
        "--agent",
        default=os.environ.get("SLEUTH_AGENT", "default"),
        help="label 'agent' on the exported metrics" if scheduled else None,
    )
    p.add_argument("--dataset", default=None, help="label 'dataset' (default: the file's stem)")
    p.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    p.add_argument(
        "--final-report",
        action="store_true",
        help="allow --split test/all: this run is a release report, not tuning"
        if scheduled
        else "allow --split test/all",
    )
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument(
        "--max-failed-rows",
        type=int,
        default=0,
        help="failed rows/cases tolerated before the gate fails (default 0)" if scheduled else None,
    )
    p.add_argument("--out", type=Path, help="write the JSON result here")
    p.add_argument("--prom", type=Path, help="write the Prometheus text exposition here")
    p.add_argument("--pushgateway", help="push the metrics to this Pushgateway address")
    p.add_argument("--html", type=Path, help="write the HTML report here")
    if scheduled:
        add_trace_url_option(p)
    p.add_argument("--no-progress", action="store_true")
    if not scheduled:
        return
    p.add_argument(
        "--shard",
        metavar="INDEX/COUNT",
        help="score only shard INDEX of COUNT (by id hash), e.g. $JOB_COMPLETION_INDEX/4; "
        "merge the shards' results with: sleuth eval report --merge ... --out",
    )
    p.add_argument(
        "--keep-runs",
        type=_positive,
        metavar="N",
        help="with --out in a folder of its own per run: keep the N newest run folders beside "
        "it, removing older ones (an EvalSchedule's spec.reports.keepRuns)",
    )
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    p.add_argument("--api-key", default=os.environ.get("SLEUTH_EVAL_API_KEY", "sk-local"))
    _add_status_options(p)


def add_trace_url_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace-url-template",
        type=_trace_url,
        default=os.environ.get(TRACE_URL_ENV) or None,
        metavar="URL",
        help="with --html: link each row's trace id into the trace UI, e.g. "
        f"'http://jaeger:16686/trace/{{trace_id}}' (default ${TRACE_URL_ENV}; unset: ids "
        "shown as text)",
    )


def _trace_url(text: str) -> str:
    try:
        return check_trace_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _status_target(text: str) -> StatusTarget:
    try:
        return StatusTarget.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number >= 1")
    return value


def _add_status_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("results in an EvalSchedule's status")
    g.add_argument(
        "--status",
        type=_status_target,
        default=os.environ.get(STATUS_ENV) or None,
        metavar="NAMESPACE/NAME",
        help=f"write this run's part (and, from the last part, the run's results) to the "
        f"status of this EvalSchedule (default ${STATUS_ENV}; unset: no status written)",
    )
    g.add_argument(
        "--run-id",
        default=os.environ.get(RUN_ID_ENV) or None,
        help=f"the run this part belongs to, the same for all its parts, e.g. the Job's name "
        f"(default ${RUN_ID_ENV}; else manual-<time>, allowed with one part only)",
    )
    g.add_argument(
        "--expect-parts",
        type=_positive,
        default=os.environ.get(EXPECT_PARTS_ENV) or "1",
        metavar="N",
        help=f"parts that complete the run: containers x shards (default ${EXPECT_PARTS_ENV}, "
        "else 1)",
    )
    g.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: in-cluster when KUBERNETES_SERVICE_HOST is set, else "
        "$KUBECONFIG or ~/.kube/config)",
    )


def outputs(ns: argparse.Namespace) -> Outputs:
    """Where the result goes (``--trace-url-template`` only where the parser has it)."""
    return Outputs(
        out=ns.out,
        prom=ns.prom,
        pushgateway=ns.pushgateway,
        html=ns.html,
        trace_url=vars(ns).get("trace_url_template"),
        keep_runs=vars(ns).get("keep_runs"),
    )


def run_options(ns: argparse.Namespace) -> RunOptions:
    """The options :func:`add_run_options` added (``--shard`` only where the parser has it)."""
    return RunOptions(
        agent=ns.agent,
        dataset=ns.dataset,
        split=ns.split,
        final_report=ns.final_report,
        thresholds=tuple(ns.threshold),
        max_failed_rows=ns.max_failed_rows,
        outputs=outputs(ns),
        progress=not ns.no_progress,
        shard=vars(ns).get("shard"),
    )


def client_options(ns: argparse.Namespace) -> ClientOptions:
    return ClientOptions(concurrency=ns.concurrency, timeout_s=ns.timeout, api_key=ns.api_key)


def status_options(ns: argparse.Namespace) -> StatusOptions:
    return StatusOptions(
        target=ns.status,
        run_id=ns.run_id,
        expect_parts=ns.expect_parts,
        kubeconfig=ns.kubeconfig,
    )
