"""``sleuth eval tsa|ragas|retrieval|compare|synth-corpus|build-golden|report``: runs, reports,
and a CI gate in the exit code.

Exit codes: 0 every threshold met; 1 a threshold missed or more failed rows than allowed;
2 invalid input (dataset, split guard, manifest, arguments). An unreachable endpoint makes every
case or row fail, which is counted and fails the gate (1). 3 the results could not be written to
the EvalSchedule given by --status (when the eval itself would have exited 0). With --status (a
scheduled run) a missed threshold exits 0 once the part is written: the EvalSchedule's alerts
judge the scores, and a failed pod would only make the Job run everything again.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from sleuth.evals.runs import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_STATUS,
    guarded,
    run_ragas,
    run_report,
    run_tsa,
)
from sleuth.evals.status import EXPECT_PARTS_ENV, RUN_ID_ENV, STATUS_ENV, StatusTarget

TRACE_URL_ENV = "SLEUTH_EVAL_TRACE_URL_TEMPLATE"

__all__ = ["EXIT_GATE", "EXIT_INPUT", "EXIT_OK", "EXIT_STATUS", "register"]


def _common_outputs(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent",
        default=os.environ.get("SLEUTH_AGENT", "default"),
        help="label 'agent' on the exported metrics",
    )
    p.add_argument("--dataset", default=None, help="label 'dataset' (default: the file's stem)")
    p.add_argument("--split", default="dev", choices=["dev", "test", "all"])
    p.add_argument(
        "--final-report",
        action="store_true",
        help="allow --split test/all: this run is a release report, not tuning",
    )

    p.add_argument("--threshold", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument(
        "--max-failed-rows",
        type=int,
        default=0,
        help="failed rows/cases tolerated before the gate fails (default 0)",
    )
    p.add_argument("--out", type=Path, help="write the JSON result here")
    p.add_argument("--prom", type=Path, help="write the Prometheus text exposition here")
    p.add_argument("--pushgateway", help="push the metrics to this Pushgateway address")
    p.add_argument("--html", type=Path, help="write the HTML report here")
    _trace_url_option(p)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--shard",
        metavar="INDEX/COUNT",
        help="score only shard INDEX of COUNT (by id hash), e.g. $JOB_COMPLETION_INDEX/4; "
        "merge the shards' results with: sleuth eval report --merge ... --out",
    )
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    p.add_argument("--api-key", default=os.environ.get("SLEUTH_EVAL_API_KEY", "sk-local"))
    _status_options(p)


def _trace_url(text: str) -> str:
    from sleuth.evals.report.html import check_trace_url

    try:
        return check_trace_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _trace_url_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--trace-url-template",
        type=_trace_url,
        default=os.environ.get(TRACE_URL_ENV) or None,
        metavar="URL",
        help="with --html: link each row's trace id into the trace UI, e.g. "
        f"'http://jaeger:16686/trace/{{trace_id}}' (default ${TRACE_URL_ENV}; unset: ids "
        "shown as text)",
    )


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


def _status_options(p: argparse.ArgumentParser) -> None:
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


def register(subparsers: Any) -> None:
    ev = subparsers.add_parser(
        "eval",
        help="evaluations: tsa, ragas, retrieval, compare, synth-corpus, build-golden, report",
    )
    sub = ev.add_subparsers(dest="eval_command", metavar="EVAL", required=True)

    tsa = sub.add_parser("tsa", help="tool selection accuracy against a model or traces")
    tsa.add_argument("--cases", type=Path, help="TSA JSONL (default: the shipped set)")
    src = tsa.add_mutually_exclusive_group(required=True)
    src.add_argument("--endpoint", help="OpenAI-compatible base URL, e.g. http://vllm:8000/v1")
    src.add_argument("--traces", type=Path, help="recorded agent runs (JSONL) to score instead")
    src.add_argument(
        "--router",
        action="store_true",
        help="score the agent's deterministic router (its no-LLM, degraded mode) instead",
    )
    src.add_argument(
        "--local-model",
        choices=["0.5b", "1.5b"],
        help="serve a small real model on loopback (sleuth local-model; the sleuth[local-model] "
        "or [local-model-small] extra) and score it; guided format json_object",
    )
    tsa.add_argument("--model", default="default")
    tsa.add_argument(
        "--tool-calling",
        choices=["native", "guided"],
        default="native",
        help="native: tools + the server's tool_calls; guided: a JSON Schema forces the reply "
        "(sleuth.core.guided)",
    )
    tsa.add_argument(
        "--guided-format",
        choices=["json_schema", "json_object"],
        default="json_schema",
        help="with --tool-calling guided: the response_format form carrying the schema",
    )
    tsa.add_argument(
        "--max-tokens", type=int, default=512, help="completion tokens per case (default 512)"
    )
    tsa.add_argument(
        "--agent-client",
        action="store_true",
        help="with --endpoint: ask through the agent's own model client (streaming, its "
        "tool-call parsing) instead of a plain chat completion",
    )
    tsa.add_argument("--system-prompt-file", type=Path)
    tsa.add_argument(
        "--descriptions",
        type=Path,
        help="JSON {tool: description} overriding the default tool descriptions",
    )
    _common_outputs(tsa)
    tsa.set_defaults(func=run_tsa)

    rg = sub.add_parser("ragas", help="RAGAS metrics with an on-premises judge")
    rg.add_argument(
        "--samples",
        type=Path,
        help="RAG rows JSONL (question, answer, contexts, reference, ...); or --agent-url",
    )
    rg.add_argument(
        "--agent-url",
        help="ask this agent (POST /v1/query) every --golden question and score its answers",
    )
    rg.add_argument("--record", type=Path, help="with --agent-url: save the agent's results")
    rg.add_argument(
        "--agent-token-file",
        type=Path,
        help="with --agent-url: a file holding the bearer token sent to the agent (in a "
        "cluster: a projected ServiceAccount token whose audience is the agent), read for each "
        "question; without it, $SLEUTH_AGENT_API_KEY when set",
    )
    rg.add_argument("--judge-url", required=True, help="judge base URL (OpenAI-compatible)")
    rg.add_argument("--judge-model", required=True)
    rg.add_argument(
        "--embeddings-url",
        help="embeddings base URL (default: the judge's), or 'local' for the local "
        "all-MiniLM-L6-v2 model",
    )
    rg.add_argument("--embeddings-model", default="embedding")
    rg.add_argument(
        "--embeddings-api-key",
        default=os.environ.get("SLEUTH_EVAL_EMBEDDINGS_API_KEY") or None,
        help="API key of --embeddings-url (default: env SLEUTH_EVAL_EMBEDDINGS_API_KEY, "
        "else --api-key)",
    )
    rg.add_argument(
        "--metrics",
        default="faithfulness,answer_relevancy,context_precision,context_recall,noise_sensitivity",
    )
    rg.add_argument(
        "--golden",
        type=Path,
        help="golden dataset: with --samples, verified against its frozen manifest and every "
        "row must be one of its cases with the same split; with --agent-url, the questions "
        "(its manifest is verified unless --split dev)",
    )
    rg.add_argument("--judge-max-tokens", type=int, default=4096)
    rg.add_argument(
        "--judge-client",
        choices=["direct", "instructor"],
        default="direct",
        help="direct: lean JSON-mode client (default); instructor: ragas' llm_factory route",
    )
    rg.add_argument(
        "--strictness",
        type=int,
        default=3,
        help="questions generated per answer for answer relevancy",
    )
    _common_outputs(rg)
    rg.set_defaults(func=run_ragas)

    from sleuth.evals.golden.commands import register as register_golden

    register_golden(sub, guarded)

    from sleuth.evals.retrieval.commands import register as register_retrieval

    register_retrieval(sub, guarded)

    rp = sub.add_parser("report", help="HTML / Prometheus from result JSON files")
    rp.add_argument("results", type=Path, nargs="+")
    rp.add_argument("--html", type=Path)
    _trace_url_option(rp)
    rp.add_argument("--prom", type=Path)
    rp.add_argument("--pushgateway")
    rp.add_argument(
        "--merge", action="store_true", help="the files are shards of one run: merge them"
    )
    rp.add_argument("--out", type=Path, help="with --merge: write the merged JSON result")
    rp.set_defaults(func=run_report)
