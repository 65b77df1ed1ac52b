"""Running TSA cases against any OpenAI-compatible chat completions endpoint.

Each case sends the query with the tool specs (``tool_choice: auto``, temperature 0) through the
one model client (:mod:`sleuth.core.llm`) and scores the tool calls of the reply; with
``tool_calling="guided"`` the client forces the reply into the guided JSON Schema instead
(:mod:`sleuth.core.guided`). Our own concurrency limit, a timeout per request and one retry on
retryable failures (connection errors, timeouts, HTTP 429/5xx: the client's
``ModelUnavailable``); a case that still fails is an error result naming the error, counted in
the summary.

Besides the scores, each result says whether the reply was **malformed** (a guided reply that
is not the schema's JSON, or native call arguments that are not a JSON object), whether it was a
**call written as text** (a native reply without ``tool_calls`` whose text names an offered tool
the way a call does — what models without a tool-call parser do) and the seconds it took. A
guided reply cut at ``max_tokens`` after its thought chose ``"answer"`` is a no-tool decision,
scored as such; one cut inside its thought or its tool calls is malformed. A guided reply's
thought is kept in the result (``thought``): what the model said the question needed.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sleuth.agent.loop import opening_messages
from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
from sleuth.core.errors import SleuthError
from sleuth.core.guided import GuidedFormat, GuidedReplyError, ToolCalling, began_answer
from sleuth.core.llm import ChatModel, ModelTurn, OpenAIChatModel
from sleuth.core.tools import ToolSpec
from sleuth.evals.progress import Progress
from sleuth.evals.tsa.cases import TsaCase
from sleuth.evals.tsa.scoring import ActualCall, CaseResult, error_result, score_case


@dataclass
class EndpointConfig:
    base_url: str
    model: str
    api_key: str = "sk-local"
    timeout_s: float = 60.0
    concurrency: int = 4
    max_tokens: int = 512
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tool_calling: ToolCalling = "native"
    guided_format: GuidedFormat = "json_schema"


@dataclass
class TsaRun:
    results: list[CaseResult]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def written_call(text: str | None, tools: Sequence[str]) -> bool:
    """Whether a text reply holds a tool call written as text (``"name": "<tool>"`` or a Hermes
    ``<tool_call>`` block) rather than sent as ``tool_calls``."""
    if not text:
        return False
    if "<tool_call>" in text:
        return True
    names = "|".join(re.escape(t) for t in tools)
    return bool(names) and re.search(rf'"name"\s*:\s*"({names})"', text) is not None


def endpoint_model(cfg: EndpointConfig) -> OpenAIChatModel:
    """The model client for ``cfg``: not streamed, temperature 0, ``tool_choice: auto``."""
    return OpenAIChatModel(
        cfg.base_url,
        cfg.model,
        timeout_s=cfg.timeout_s,
        stream=False,
        temperature=0.0,
        max_tokens=cfg.max_tokens,
        api_key=cfg.api_key,
        max_connections=max(1, cfg.concurrency),
        tool_choice="auto",
        tool_calling=cfg.tool_calling,
        guided_format=cfg.guided_format,
    )


async def run_cases(
    cases: Sequence[TsaCase],
    specs: Sequence[ToolSpec],
    cfg: EndpointConfig,
    *,
    progress: bool = False,
) -> TsaRun:
    """Score every case against the endpoint; results keep the order of ``cases``."""
    model = endpoint_model(cfg)
    try:
        return await run_with_chat_model(
            cases,
            specs,
            model,
            system_prompt=cfg.system_prompt,
            concurrency=cfg.concurrency,
            retries=1,
            progress=progress,
        )
    finally:
        await model.aclose()


async def run_with_chat_model(
    cases: Sequence[TsaCase],
    specs: Sequence[ToolSpec],
    model: ChatModel,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    concurrency: int = 1,
    retries: int = 0,
    progress: bool = False,
) -> TsaRun:
    """Score the first decision of a :class:`ChatModel`: the endpoint's (:func:`run_cases`), the
    agent's own model client (streaming, the same parsing of tool calls the loop uses) or its
    deterministic router. A model error is an error result, counted; one that says it is
    retryable is tried again up to ``retries`` times first."""
    by_name = {s.name: s for s in specs}
    tools = [s.to_openai() for s in specs]
    calling = getattr(model, "tool_calling", None)  # a model written before the attribute
    run = TsaRun(results=[], extra={"model": model.name, "tool_calling": calling})
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = Progress(len(cases), "tsa", enabled=progress)

    async def ask(messages: list[dict[str, Any]]) -> ModelTurn:
        for _retry in range(retries):
            async with sem:
                run.requests += 1
                try:
                    return await model.complete(messages, tools)
                except SleuthError as exc:
                    if not exc.retryable:
                        raise
        async with sem:
            run.requests += 1
            return await model.complete(messages, tools)

    async def one(case: TsaCase) -> CaseResult:
        messages = opening_messages(system_prompt, case.query)
        started = time.perf_counter()
        try:
            turn = await ask(messages)
        except GuidedReplyError as exc:
            if not began_answer(exc.text):
                bar.advance(failed=True)
                failed = error_result(case, f"{type(exc).__name__}: {exc}")
                failed.seconds = time.perf_counter() - started
                failed.malformed = True
                return failed
            # An answer cut at max_tokens: the decision (no tool) was made by its first key.
            turn = ModelTurn(content=exc.text, finish_reason="length")
        except Exception as exc:  # any model failure is this case's error, reported
            bar.advance(failed=True)
            failed = error_result(case, f"{type(exc).__name__}: {exc}")
            failed.seconds = time.perf_counter() - started
            return failed
        seconds = time.perf_counter() - started
        run.prompt_tokens += turn.prompt_tokens
        run.completion_tokens += turn.completion_tokens
        calls = [
            ActualCall.from_openai({"function": {"name": c.name, "arguments": c.arguments_text}})
            for c in turn.tool_calls
        ]
        result = score_case(case, calls, by_name)
        result.seconds = seconds
        result.malformed = any(c.arguments is None for c in calls)
        result.text_call = not calls and written_call(turn.content, list(by_name))
        result.thought = turn.thought
        bar.advance(failed=not result.passed)
        return result

    run.results = list(await asyncio.gather(*(one(c) for c in cases)))
    return run
