"""Running TSA cases against any OpenAI-compatible chat completions endpoint.

Each case sends the query with the tool specs (``tool_choice: auto``, temperature 0) and scores
the tool calls of the reply. Our own concurrency limit, a timeout per request and one retry on
retryable failures (connection errors, timeouts, HTTP 429/5xx); a case that still fails is an
error result, counted in the summary.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from sleuth.agent.prompts import DEFAULT_SYSTEM_PROMPT
from sleuth.core.llm import ChatModel
from sleuth.core.tools import ToolSpec
from sleuth.evals.errors import EndpointError
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


@dataclass
class TsaRun:
    results: list[CaseResult]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


async def request_tool_calls(
    client: httpx.AsyncClient, cfg: EndpointConfig, query: str, specs: Sequence[ToolSpec]
) -> tuple[list[ActualCall], dict[str, int]]:
    """One chat completion; the tool calls of the first choice and the usage block."""
    body = {
        "model": cfg.model,
        "messages": [
            {"role": "system", "content": cfg.system_prompt},
            {"role": "user", "content": query},
        ],
        "tools": [s.to_openai() for s in specs],
        "tool_choice": "auto",
        "temperature": 0,
        "max_tokens": cfg.max_tokens,
    }
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    try:
        resp = await client.post(url, json=body, headers={"Authorization": f"Bearer {cfg.api_key}"})
    except httpx.TimeoutException as exc:
        raise EndpointError(f"timeout after {cfg.timeout_s:g}s", retryable=True) from exc
    except httpx.TransportError as exc:
        raise EndpointError(f"connection failed: {exc}", retryable=True) from exc
    if resp.status_code >= 400:
        raise EndpointError(
            f"HTTP {resp.status_code}: {resp.text[:200]}",
            retryable=_retryable_status(resp.status_code),
        )
    try:
        data = resp.json()
        message = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise EndpointError(f"not a chat completion: {resp.text[:200]}") from exc
    calls = [ActualCall.from_openai(c) for c in (message.get("tool_calls") or [])]
    usage = data.get("usage") or {}
    return calls, {k: int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}


async def run_cases(
    cases: Sequence[TsaCase],
    specs: Sequence[ToolSpec],
    cfg: EndpointConfig,
    *,
    progress: bool = False,
) -> TsaRun:
    """Score every case against the endpoint; results keep the order of ``cases``."""
    by_name = {s.name: s for s in specs}
    run = TsaRun(results=[])
    sem = asyncio.Semaphore(max(1, cfg.concurrency))
    bar = Progress(len(cases), "tsa", enabled=progress)
    limits = httpx.Limits(max_connections=max(1, cfg.concurrency))

    async with httpx.AsyncClient(timeout=cfg.timeout_s, limits=limits) as client:

        async def one(case: TsaCase) -> CaseResult:
            last: EndpointError | None = None
            for _attempt in range(2):
                async with sem:
                    run.requests += 1
                    try:
                        calls, usage = await request_tool_calls(client, cfg, case.query, specs)
                    except EndpointError as exc:
                        last = exc
                        if exc.retryable:
                            continue
                        break
                run.prompt_tokens += usage["prompt_tokens"]
                run.completion_tokens += usage["completion_tokens"]
                result = score_case(case, calls, by_name)
                bar.advance(failed=not result.passed)
                return result
            bar.advance(failed=True)
            return error_result(case, str(last))

        run.results = list(await asyncio.gather(*(one(c) for c in cases)))
    return run


async def run_with_chat_model(
    cases: Sequence[TsaCase],
    specs: Sequence[ToolSpec],
    model: ChatModel,
    *,
    system_prompt: str = DEFAULT_SYSTEM_PROMPT,
    concurrency: int = 1,
    progress: bool = False,
) -> TsaRun:
    """Score the first decision of a :class:`ChatModel`: the agent's own model client
    (streaming, the same parsing of tool calls the loop uses) or its deterministic router. A
    model error is an error result, counted."""
    by_name = {s.name: s for s in specs}
    tools = [s.to_openai() for s in specs]
    run = TsaRun(results=[], extra={"model": model.name})
    sem = asyncio.Semaphore(max(1, concurrency))
    bar = Progress(len(cases), "tsa", enabled=progress)

    async def one(case: TsaCase) -> CaseResult:
        messages = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": case.query},
        ]
        async with sem:
            run.requests += 1
            try:
                turn = await model.complete(messages, tools)
            except Exception as exc:  # any model failure is this case's error, reported
                bar.advance(failed=True)
                return error_result(case, f"{type(exc).__name__}: {exc}")
        run.prompt_tokens += turn.prompt_tokens
        run.completion_tokens += turn.completion_tokens
        calls = [
            ActualCall.from_openai({"function": {"name": c.name, "arguments": c.arguments_text}})
            for c in turn.tool_calls
        ]
        result = score_case(case, calls, by_name)
        bar.advance(failed=not result.passed)
        return result

    run.results = list(await asyncio.gather(*(one(c) for c in cases)))
    return run
