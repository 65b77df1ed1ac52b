"""``sleuth eval tsa``: tool selection accuracy against a model, the router or recorded traces."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace

from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
from sleuth.agent.router import RouterModel
from sleuth.core.llm import OpenAIChatModel
from sleuth.core.localmodel import SERVED_NAME, LocalModelServer
from sleuth.core.tools import DEFAULT_SPECS, ToolSpec, with_description
from sleuth.evals.commands.agentstep import fetch_first_step, wake_model
from sleuth.evals.commands.inputs import check_split, labels, this_shard
from sleuth.evals.commands.options import TsaOptions
from sleuth.evals.commands.reporting import StatusReport, emit
from sleuth.evals.errors import EvalError
from sleuth.evals.report.results import parse_thresholds, tsa_document
from sleuth.evals.splits import content_key
from sleuth.evals.traces import index_by_question, load_recorded
from sleuth.evals.tsa.cases import TsaCase, load_cases, shipped_cases_path
from sleuth.evals.tsa.runner import EndpointConfig, TsaRun, run_cases, run_with_chat_model
from sleuth.evals.tsa.scoring import CaseResult, error_result, score_case


def run_tsa(options: TsaOptions, report: StatusReport) -> int:
    check_split(options.run)
    _check_agent_step(options)
    path = options.cases or shipped_cases_path()
    cases = this_shard(load_cases(path, options.run.split), _case_id, options.run, path, "cases")
    specs = _specs(options)
    thresholds = parse_thresholds(options.run.thresholds)
    if options.traces:
        run = _from_traces(options, cases, specs)
    elif options.router:
        run = asyncio.run(run_with_chat_model(cases, list(specs.values()), RouterModel()))
    elif options.agent_url:
        run = asyncio.run(_with_agent_step(options, cases))
    elif options.agent_client:
        run = asyncio.run(_with_agent_client(options, cases, list(specs.values())))
    else:
        run = _with_endpoint(options, cases, list(specs.values()))
    doc = tsa_document(run, labels(options.run, path), thresholds, options.run.max_failed_rows)
    return emit(doc, options.run.outputs, report)


def _check_agent_step(options: TsaOptions) -> None:
    """``--agent-url`` brings the prompt and the descriptions: the flags that set them conflict."""
    if not options.agent_url:
        return
    if not options.endpoint:
        raise EvalError("--agent-url: needs --endpoint, the agent's model server")
    for flag, value in (
        ("--system-prompt-file", options.system_prompt_file),
        ("--descriptions", options.descriptions),
    ):
        if value is not None:
            raise EvalError(f"{flag}: --agent-url reads the agent's own; leave {flag} out")


def _case_id(case: TsaCase) -> str:
    return case.id


def _specs(options: TsaOptions) -> dict[str, ToolSpec]:
    """The tools offered: the default specs, with ``--descriptions`` overriding their text."""
    specs = dict(DEFAULT_SPECS)
    if options.descriptions:
        overrides = json.loads(options.descriptions.read_text(encoding="utf-8"))
        specs = {n: with_description(s, overrides.get(n)) for n, s in specs.items()}
    return specs


def _system_prompt(options: TsaOptions) -> str:
    if options.system_prompt_file:
        return options.system_prompt_file.read_text(encoding="utf-8")
    return DEFAULT_SYSTEM_PROMPT


def _from_traces(
    options: TsaOptions, cases: Sequence[TsaCase], specs: dict[str, ToolSpec]
) -> TsaRun:
    """Score the first tool calls of recorded agent runs (``--traces``)."""
    assert options.traces is not None
    recorded = index_by_question(load_recorded(options.traces))
    results: list[CaseResult] = []
    for c in cases:
        rec = recorded.get(c.id) or recorded.get(content_key(c.query))
        if rec is None:
            results.append(error_result(c, "no recorded trace for this case"))
            continue
        result = score_case(c, rec.first_calls, specs)
        result.trace_id = rec.trace_id
        results.append(result)
    return TsaRun(results=results, extra={"source": str(options.traces)})


def _with_endpoint(
    options: TsaOptions, cases: Sequence[TsaCase], specs: Sequence[ToolSpec]
) -> TsaRun:
    """A plain chat completion per case, against ``--endpoint`` or a ``--local-model``."""
    cfg = EndpointConfig(
        base_url=options.endpoint or "",
        model=options.model,
        api_key=options.client.api_key,
        timeout_s=options.client.timeout_s,
        concurrency=options.client.concurrency,
        system_prompt=_system_prompt(options),
        max_tokens=options.max_tokens,
        tool_calling=options.tool_calling,
        guided_format=options.guided_format,
    )
    progress = options.run.progress
    if options.local_model:
        run = _with_local_model(options.local_model, cases, specs, cfg, progress)
    else:
        run = asyncio.run(run_cases(cases, specs, cfg, progress=progress))
    run.extra = {
        "endpoint": cfg.base_url,
        "model": options.local_model or options.model,
        "tool_calling": options.tool_calling,
    }
    return run


def _with_local_model(
    key: str,
    cases: Sequence[TsaCase],
    specs: Sequence[ToolSpec],
    cfg: EndpointConfig,
    progress: bool,
) -> TsaRun:
    """TSA against a local model served for this run (one request at a time: a CPU)."""

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    with LocalModelServer(key, log=log) as server:
        local = replace(
            cfg, base_url=server.url, model=SERVED_NAME, concurrency=1, guided_format="json_object"
        )
        return asyncio.run(run_cases(cases, specs, local, progress=progress))


async def _with_agent_step(options: TsaOptions, cases: Sequence[TsaCase]) -> TsaRun:
    """Ask the agent's model exactly as the agent's first step does: its system prompt, its tools
    (as its tool services serve them, with its descriptions), its model client's options."""
    assert options.agent_url is not None
    assert options.endpoint is not None
    step = await asyncio.to_thread(
        fetch_first_step, options.agent_url, options.agent_credential, options.client.timeout_s
    )
    # The cases go straight to the model server: if it sleeps at zero replicas, only the agent
    # can wake it.
    waited = await asyncio.to_thread(wake_model, options.agent_url, options.agent_credential)
    model = OpenAIChatModel(
        options.endpoint,
        options.model,
        timeout_s=options.client.timeout_s,
        api_key=options.client.api_key,
        **step.model.client_options(),
    )
    try:
        run = await run_with_chat_model(
            cases,
            step.specs(),
            model,
            system_prompt=step.system_prompt,
            concurrency=options.client.concurrency,
            progress=options.run.progress,
        )
    finally:
        await model.aclose()
    prompt = hashlib.sha256(step.system_prompt.encode()).hexdigest()[:16]
    run.extra = {
        "endpoint": options.endpoint,
        "model": options.model,
        "client": "agent",
        "agent_url": options.agent_url,
        "tools": [spec.name for spec in step.specs()],
        "system_prompt_sha256": prompt,
        "model_wake_seconds": waited,
    }
    return run


async def _with_agent_client(
    options: TsaOptions, cases: Sequence[TsaCase], specs: Sequence[ToolSpec]
) -> TsaRun:
    """Ask through the agent's own model client (streaming, its tool-call parsing)."""
    model = OpenAIChatModel(
        options.endpoint or "",
        options.model,
        timeout_s=options.client.timeout_s,
        api_key=options.client.api_key,
        tool_calling=options.tool_calling,
        guided_format=options.guided_format,
    )
    try:
        run = await run_with_chat_model(
            cases,
            specs,
            model,
            system_prompt=_system_prompt(options),
            concurrency=options.client.concurrency,
            progress=options.run.progress,
        )
    finally:
        await model.aclose()
    run.extra = {"endpoint": options.endpoint, "model": options.model, "client": "agent"}
    return run
