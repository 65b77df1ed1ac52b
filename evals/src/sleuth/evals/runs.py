"""What each ``sleuth eval`` subcommand does once its arguments are parsed (parsers: cli.py).

Exit codes: 0 every threshold met; 1 a threshold missed or more failed rows than allowed;
2 invalid input (dataset, split guard, manifest, arguments); 3 the results could not be written
to the EvalSchedule named by ``--status`` (only when the eval itself would have exited 0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth.core.errors import SleuthError
from sleuth.evals.errors import EvalError

if TYPE_CHECKING:
    from sleuth.evals.tracing import EvalTrace

EXIT_OK, EXIT_GATE, EXIT_INPUT, EXIT_STATUS = 0, 1, 2, 3


def guarded(fn: Any) -> Any:
    """Errors → exit 2 with one line; with ``--status`` the run still reports a Failed part."""

    def wrapper(args: argparse.Namespace) -> int:
        refused = prepare_status(args)
        if refused is not None:
            return refused
        try:
            code: int = fn(args)
            return code
        except (SleuthError, ValueError, OSError) as exc:
            print(f"sleuth eval: error: {exc}", file=sys.stderr)
            return publish(args, EXIT_INPUT, error=str(exc))
        except Exception as exc:
            publish(args, EXIT_INPUT, error=f"unexpected {type(exc).__name__}: {exc}")
            raise

    return wrapper


def prepare_status(args: argparse.Namespace) -> int | None:
    """Before a run that reports to an EvalSchedule: settle its run id and check it is there
    (a typo in ``--status`` fails in a second, not after an hour of scoring)."""
    target = getattr(args, "status", None)
    if target is None:
        return None
    from sleuth.evals import status as st
    from sleuth.evals.statuswriter import StatusWriter, api_client

    if not args.run_id:
        if args.expect_parts > 1:
            print(
                f"sleuth eval: error: --expect-parts {args.expect_parts} needs --run-id "
                f"(or {st.RUN_ID_ENV}), the same for every part of the run",
                file=sys.stderr,
            )
            return EXIT_INPUT
        args.run_id = "manual-" + st.now_rfc3339().replace(":", "").replace("-", "").lower()
    try:
        StatusWriter(api_client(args.kubeconfig), target).read()
    except st.StatusError as exc:
        print(f"sleuth eval: error: EvalSchedule {target}: {exc}", file=sys.stderr)
        return EXIT_STATUS
    return None


def publish(
    args: argparse.Namespace,
    code: int,
    *,
    doc: dict[str, Any] | None = None,
    error: str | None = None,
) -> int:
    """Write this process's part of the run to ``--status`` (no-op without it).

    ``code`` is the eval's own exit code; a failed write turns a 0 into 3 and leaves any other
    code as it is."""
    target = getattr(args, "status", None)
    if target is None or not getattr(args, "run_id", None):
        return code
    from sleuth.evals import status as st
    from sleuth.evals.statuswriter import StatusWriter, api_client

    finished = st.now_rfc3339()
    if doc is not None:
        part = st.part_from_document(doc, finished_at=finished)
        run = st.RunContext(args.run_id, args.expect_parts, doc.get("dataset"), doc.get("split"))
    else:
        part = st.failed_part(
            args.eval_command, args.shard, error or "failed", finished_at=finished
        )
        run = st.RunContext(args.run_id, args.expect_parts)
    try:
        new = StatusWriter(api_client(args.kubeconfig), target).write_part(part, run)
    except st.StatusError as exc:
        print(
            f"sleuth eval: error: part {part.name} of run {run.run_id} was not written to "
            f"EvalSchedule {target}: {exc}",
            file=sys.stderr,
        )
        return code or EXIT_STATUS
    progress = new["currentRun"]
    line = (
        f"status: part {part.name} ({part.outcome}) of run {run.run_id} written to EvalSchedule "
        f"{target}: {len(progress['parts'])}/{progress['expectedParts']} parts"
    )
    if new.get("lastRunId") == run.run_id and len(progress["parts"]) >= run.expected_parts:
        line += f"; run {new['lastRunOutcome']}"
    print(line)
    if code == EXIT_GATE and doc is not None and part.outcome == "Succeeded":
        # A scheduled part that scored is a success even when a score misses its threshold: the
        # scores are in the status and the EvalSchedule's PrometheusRules judge them. Failing
        # the pod would make the Job retry the whole run (judge calls on the serving GPUs) and
        # show a failed Job for a run that did its work.
        print("gate: thresholds missed; reported through the EvalSchedule, not the exit code")
        return EXIT_OK
    return code


def emit(doc: dict[str, Any], args: argparse.Namespace) -> int:
    from sleuth.evals.report import html, prometheus
    from sleuth.evals.report.results import write_document

    if args.out:
        write_document(doc, args.out)
    if args.prom:
        args.prom.write_text(prometheus.exposition([doc]), encoding="utf-8")
    if args.pushgateway:
        prometheus.push([doc], args.pushgateway)
    if args.html:
        trace_url = getattr(args, "trace_url_template", None)
        args.html.write_text(html.render([doc], trace_url=trace_url), encoding="utf-8")
    from sleuth.evals.report.console import print_summary

    print_summary(doc)
    return publish(args, EXIT_OK if doc["gate"]["passed"] else EXIT_GATE, doc=doc)


def shard_of(args: argparse.Namespace) -> tuple[int, int] | None:
    from sleuth.evals.splits import parse_shard

    return parse_shard(args.shard) if args.shard else None


@guarded
def run_tsa(args: argparse.Namespace) -> int:
    import json

    from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
    from sleuth.core.tools import DEFAULT_SPECS, with_description
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
    shard = shard_of(args)
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
            if rec is None:
                results.append(error_result(c, "no recorded trace for this case"))
                continue
            result = score_case(c, rec.first_calls, specs)
            result.trace_id = rec.trace_id
            results.append(result)
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
            base_url=args.endpoint or "",
            model=args.model,
            api_key=args.api_key,
            timeout_s=args.timeout,
            concurrency=args.concurrency,
            system_prompt=prompt,
            max_tokens=args.max_tokens,
            tool_calling=args.tool_calling,
            guided_format=args.guided_format,
        )
        if args.local_model:
            run = _tsa_local(args.local_model, cases, list(specs.values()), cfg, args)
        else:
            run = asyncio.run(
                run_cases(cases, list(specs.values()), cfg, progress=not args.no_progress)
            )
        run.extra = {
            "endpoint": cfg.base_url,
            "model": args.local_model or args.model,
            "tool_calling": args.tool_calling,
        }
    labels = RunLabels(
        args.agent,
        args.dataset or Path(path).stem,
        args.split,
        dataset_sha256=file_sha256(path),
        shard=args.shard or "",
    )
    return emit(tsa_document(run, labels, thresholds, args.max_failed_rows), args)


def _tsa_local(key: str, cases: Any, specs: Any, cfg: Any, args: argparse.Namespace) -> Any:
    """TSA against a local model served for this run (one request at a time: a CPU)."""
    import sys
    from dataclasses import replace

    from sleuth.core.localmodel import SERVED_NAME, LocalModelServer
    from sleuth.evals.tsa.runner import run_cases

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with LocalModelServer(key, log=log) as server:
        local = replace(
            cfg, base_url=server.url, model=SERVED_NAME, concurrency=1, guided_format="json_object"
        )
        return asyncio.run(run_cases(cases, specs, local, progress=not args.no_progress))


async def _tsa_with_agent_client(args: argparse.Namespace, cases: Any, specs: Any) -> Any:
    from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
    from sleuth.core.llm import OpenAIChatModel
    from sleuth.evals.tsa.runner import run_with_chat_model

    prompt = (
        args.system_prompt_file.read_text(encoding="utf-8")
        if args.system_prompt_file
        else DEFAULT_SYSTEM_PROMPT
    )
    model = OpenAIChatModel(
        args.endpoint,
        args.model,
        timeout_s=args.timeout,
        api_key=args.api_key,
        tool_calling=args.tool_calling,
        guided_format=args.guided_format,
    )
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


@guarded
def run_ragas(args: argparse.Namespace) -> int:
    """The RAGAS run, traced when the ``OTEL_*`` variables say so (:mod:`sleuth.evals.tracing`)."""
    from sleuth.core.tracing import TracingSettings, start_tracing
    from sleuth.evals.tracing import EVAL_SERVICE, EvalTrace

    tracing = start_tracing(TracingSettings.from_env(os.environ, EVAL_SERVICE))
    trace = EvalTrace(tracing)
    source = args.golden if args.agent_url else args.samples
    labels = {
        "agent": args.agent,
        "dataset": args.dataset or (Path(source).stem if source else ""),
        "split": args.split,
        "run_id": getattr(args, "run_id", None) or "",
    }
    try:
        with trace.run("ragas", labels):
            return _ragas(args, trace)
    finally:
        tracing.shutdown()


def _ragas(args: argparse.Namespace, trace: EvalTrace) -> int:
    from sleuth.evals.golden.manifest import guard_split
    from sleuth.evals.rag.runner import run_metrics
    from sleuth.evals.report.results import (
        RunLabels,
        file_sha256,
        parse_thresholds,
        ragas_document,
    )
    from sleuth.scoring.judge import JudgeConfig, build_judge
    from sleuth.scoring.samples import load_samples

    guard_split(args.split, args.final_report)
    collected_failures: list[Any] = []
    if args.agent_url:
        if not args.golden or args.samples:
            raise EvalError("--agent-url needs --golden (the questions) and no --samples")
        from sleuth.evals.golden.cases import load_golden
        from sleuth.evals.golden.manifest import verify
        from sleuth.evals.rag.agentauth import AgentCredential
        from sleuth.evals.rag.collect import collect, write_records

        cases = load_golden(args.golden, args.split)
        shard = shard_of(args)
        if shard is not None:
            from sleuth.evals.splits import in_shard

            cases = [c for c in cases if in_shard(c.id, *shard)]
        if not cases and shard is None:
            raise EvalError(f"{args.golden}: no cases in split {args.split!r}")
        if args.split != "dev":
            verify(load_golden(args.golden), args.golden)
        trace.asking(len(cases))
        collected = asyncio.run(
            collect(
                cases,
                args.agent_url,
                concurrency=args.concurrency,
                timeout_s=args.timeout,
                progress=not args.no_progress,
                trace=trace,
                credential=AgentCredential.from_args(args.agent_token_file),
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
        shard = shard_of(args)
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
        embeddings_api_key=args.embeddings_api_key,
    )

    async def go() -> Any:
        bundle = build_judge(cfg)
        try:
            return await run_metrics(
                rows,
                metrics,
                bundle,
                strictness=args.strictness,
                progress=not args.no_progress,
                trace=trace,
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
    return emit(ragas_document(run, labels, thresholds, args.max_failed_rows), args)


@guarded
def run_report(args: argparse.Namespace) -> int:
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
        args.html.write_text(html.render(docs, trace_url=args.trace_url_template), encoding="utf-8")
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
