"""``sleuth eval tsa|ragas|build-golden|report``: runs, reports, and a CI gate in the exit code.

Exit codes: 0 every threshold met; 1 a threshold missed or more failed rows than allowed;
2 invalid input (dataset, split guard, manifest, arguments). An unreachable endpoint makes every
case or row fail, which is counted and fails the gate (1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from sleuth.evals.errors import EvalError

EXIT_OK, EXIT_GATE, EXIT_INPUT = 0, 1, 2


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


def register(subparsers: Any) -> None:
    ev = subparsers.add_parser("eval", help="evaluations: tsa, ragas, build-golden, report")
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
    tsa.add_argument("--model", default="default")
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
    tsa.set_defaults(func=_run_tsa)

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
    rg.add_argument("--judge-url", required=True, help="judge base URL (OpenAI-compatible)")
    rg.add_argument("--judge-model", required=True)
    rg.add_argument(
        "--embeddings-url",
        help="embeddings base URL (default: the judge's), or 'local' for the local "
        "all-MiniLM-L6-v2 model",
    )
    rg.add_argument("--embeddings-model", default="embedding")
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
    rg.set_defaults(func=_run_ragas)

    from sleuth.evals.golden.commands import register as register_golden

    register_golden(sub, _guarded)

    rp = sub.add_parser("report", help="HTML / Prometheus from result JSON files")
    rp.add_argument("results", type=Path, nargs="+")
    rp.add_argument("--html", type=Path)
    rp.add_argument("--prom", type=Path)
    rp.add_argument("--pushgateway")
    rp.add_argument(
        "--merge", action="store_true", help="the files are shards of one run: merge them"
    )
    rp.add_argument("--out", type=Path, help="with --merge: write the merged JSON result")
    rp.set_defaults(func=_run_report)


def _guarded(fn: Any) -> Any:
    def wrapper(args: argparse.Namespace) -> int:
        try:
            code: int = fn(args)
            return code
        except (EvalError, ValueError, OSError) as exc:
            print(f"sleuth eval: error: {exc}", file=sys.stderr)
            return EXIT_INPUT

    return wrapper


def _emit(doc: dict[str, Any], args: argparse.Namespace) -> int:
    from sleuth.evals.report import html, prometheus
    from sleuth.evals.report.results import write_document

    if args.out:
        write_document(doc, args.out)
    if args.prom:
        args.prom.write_text(prometheus.exposition([doc]), encoding="utf-8")
    if args.pushgateway:
        prometheus.push([doc], args.pushgateway)
    if args.html:
        args.html.write_text(html.render([doc]), encoding="utf-8")
    from sleuth.evals.report.console import print_summary

    print_summary(doc)
    return EXIT_OK if doc["gate"]["passed"] else EXIT_GATE


def _shard_of(args: argparse.Namespace) -> tuple[int, int] | None:
    from sleuth.evals.splits import parse_shard

    return parse_shard(args.shard) if args.shard else None


@_guarded
def _run_tsa(args: argparse.Namespace) -> int:
    import json

    from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
    from sleuth.agent.tools.descriptions import DEFAULT_SPECS, with_description
    from sleuth.evals.golden.manifest import guard_split
    from sleuth.evals.report.results import (
        RunLabels,
        file_sha256,
        parse_thresholds,
        tsa_document,
    )
    from sleuth.evals.splits import content_key
    from sleuth.evals.traces import index_by_question, load_recorded
    from sleuth.evals.tsa.cases import load_cases, shipped_cases_path
    from sleuth.evals.tsa.runner import EndpointConfig, TsaRun, run_cases
    from sleuth.evals.tsa.scoring import error_result, score_case

    guard_split(args.split, args.final_report)
    path = args.cases or shipped_cases_path()
    cases = load_cases(path, args.split)
    shard = _shard_of(args)
    if shard is not None:
        from sleuth.evals.splits import in_shard

        cases = [c for c in cases if in_shard(c.id, *shard)]
    if not cases and shard is None:
        raise EvalError(f"{path}: no cases in split {args.split!r}")
    specs = dict(DEFAULT_SPECS)
    if args.descriptions:
        overrides = json.loads(args.descriptions.read_text(encoding="utf-8"))
        specs = {n: with_description(s, overrides.get(n)) for n, s in specs.items()}
    thresholds = parse_thresholds(args.threshold)
    if args.traces:
        recorded = index_by_question(load_recorded(args.traces))
        results = []
        for c in cases:
            rec = recorded.get(c.id) or recorded.get(content_key(c.query))
            results.append(
                error_result(c, "no recorded trace for this case")
                if rec is None
                else score_case(c, rec.first_calls, specs)
            )
        run = TsaRun(results=results, extra={"source": str(args.traces)})
    elif args.router:
        from sleuth.agent.router import RouterModel
        from sleuth.evals.tsa.runner import run_with_chat_model

        run = asyncio.run(run_with_chat_model(cases, list(specs.values()), RouterModel()))
    elif args.agent_client:
        run = asyncio.run(_tsa_with_agent_client(args, cases, list(specs.values())))
    else:
        prompt = (
            args.system_prompt_file.read_text(encoding="utf-8")
            if args.system_prompt_file
            else DEFAULT_SYSTEM_PROMPT
        )
        cfg = EndpointConfig(
            base_url=args.endpoint,
            model=args.model,
            api_key=args.api_key,
            timeout_s=args.timeout,
            concurrency=args.concurrency,
            system_prompt=prompt,
        )
        run = asyncio.run(
            run_cases(cases, list(specs.values()), cfg, progress=not args.no_progress)
        )
        run.extra = {"endpoint": args.endpoint, "model": args.model}
    labels = RunLabels(
        args.agent,
        args.dataset or Path(path).stem,
        args.split,
        dataset_sha256=file_sha256(path),
        shard=args.shard or "",
    )
    return _emit(tsa_document(run, labels, thresholds, args.max_failed_rows), args)


async def _tsa_with_agent_client(args: argparse.Namespace, cases: Any, specs: Any) -> Any:
    from sleuth.agent.llm import OpenAIChatModel
    from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
    from sleuth.evals.tsa.runner import run_with_chat_model

    prompt = (
        args.system_prompt_file.read_text(encoding="utf-8")
        if args.system_prompt_file
        else DEFAULT_SYSTEM_PROMPT
    )
    model = OpenAIChatModel(args.endpoint, args.model, timeout_s=args.timeout, api_key=args.api_key)
    try:
        run = await run_with_chat_model(
            cases,
            specs,
            model,
            system_prompt=prompt,
            concurrency=args.concurrency,
            progress=not args.no_progress,
        )
    finally:
        await model.aclose()
    run.extra = {"endpoint": args.endpoint, "model": args.model, "client": "agent"}
    return run


@_guarded
def _run_ragas(args: argparse.Namespace) -> int:
    from sleuth.evals.golden.manifest import guard_split
    from sleuth.evals.rag.judge import JudgeConfig, build_judge
    from sleuth.evals.rag.runner import run_metrics
    from sleuth.evals.rag.samples import load_samples
    from sleuth.evals.report.results import (
        RunLabels,
        file_sha256,
        parse_thresholds,
        ragas_document,
    )

    guard_split(args.split, args.final_report)
    collected_failures: list[Any] = []
    if args.agent_url:
        if not args.golden or args.samples:
            raise EvalError("--agent-url needs --golden (the questions) and no --samples")
        from sleuth.evals.golden.cases import load_golden
        from sleuth.evals.golden.manifest import verify
        from sleuth.evals.rag.collect import collect, write_records

        cases = load_golden(args.golden, args.split)
        shard = _shard_of(args)
        if shard is not None:
            from sleuth.evals.splits import in_shard

            cases = [c for c in cases if in_shard(c.id, *shard)]
        if not cases and shard is None:
            raise EvalError(f"{args.golden}: no cases in split {args.split!r}")
        if args.split != "dev":
            verify(load_golden(args.golden), args.golden)
        collected = asyncio.run(
            collect(
                cases,
                args.agent_url,
                concurrency=args.concurrency,
                timeout_s=args.timeout,
                progress=not args.no_progress,
            )
        )
        if args.record:
            write_records(collected.records, args.record)
        rows, collected_failures = collected.rows, collected.failures
        source: Path = args.golden
    else:
        if not args.samples:
            raise EvalError("give --samples rows, or --golden with --agent-url")
        rows = load_samples(args.samples, args.split)
        shard = _shard_of(args)
        if shard is not None:
            from sleuth.evals.splits import in_shard

            rows = [r for r in rows if in_shard(r.id, *shard)]
        if not rows and shard is None:
            raise EvalError(f"{args.samples}: no rows in split {args.split!r}")
        if args.golden:
            from sleuth.evals.golden.manifest import check_rows_against_golden

            check_rows_against_golden([(r.id, r.split) for r in rows], args.golden)
        source = args.samples
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    thresholds = parse_thresholds(args.threshold)
    cfg = JudgeConfig(
        base_url=args.judge_url,
        model=args.judge_model,
        api_key=args.api_key,
        timeout_s=args.timeout,
        concurrency=args.concurrency,
        max_tokens=args.judge_max_tokens,
        client=args.judge_client,
        embeddings_base_url=args.embeddings_url,
        embeddings_model=args.embeddings_model,
    )

    async def go() -> Any:
        bundle = build_judge(cfg)
        try:
            return await run_metrics(
                rows, metrics, bundle, strictness=args.strictness, progress=not args.no_progress
            )
        finally:
            await bundle.aclose()

    run = asyncio.run(go())
    run.failures = sorted([*collected_failures, *run.failures], key=lambda f: (f.row_id, f.metric))
    labels = RunLabels(
        args.agent,
        args.dataset or source.stem,
        args.split,
        dataset_sha256=file_sha256(source),
        shard=args.shard or "",
    )
    return _emit(ragas_document(run, labels, thresholds, args.max_failed_rows), args)


@_guarded
def _run_report(args: argparse.Namespace) -> int:
    from sleuth.evals.report import html, prometheus
    from sleuth.evals.report.results import read_document

    docs = [read_document(p) for p in args.results]
    if args.merge:
        from sleuth.evals.report.merge import merge
        from sleuth.evals.report.results import write_document

        docs = [merge(docs)]
        if args.out:
            write_document(docs[0], args.out)
    if args.html:
        args.html.write_text(html.render(docs), encoding="utf-8")
    if args.prom:
        args.prom.write_text(prometheus.exposition(docs), encoding="utf-8")
    if args.pushgateway:
        prometheus.push(docs, args.pushgateway)
    failed = [d for d in docs if not d["gate"]["passed"]]
    for d in docs:
        print(
            f"{d['kind']} {d['agent']}/{d['dataset']}/{d['split']}: gate "
            + ("passed" if d["gate"]["passed"] else "FAILED")
        )
    return EXIT_GATE if failed else EXIT_OK
