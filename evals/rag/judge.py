"""The judge and embeddings behind OpenAI-compatible endpoints, with our own guards.

ragas' collections metrics call ``llm.agenerate(prompt, ResponseModel)`` (Instructor in JSON mode:
``response_format: json_object``, the schema in the system prompt) and
``embeddings.aembed_text(s)``. :class:`GuardedJudge` and :class:`GuardedEmbeddings` wrap
ragas' own clients and add what an SRE needs to trust a run:

- our concurrency limit towards the judge (a semaphore shared by every metric and row);
- a timeout per call (the OpenAI client's own retries are off: we decide about retries);
- a max-token budget high enough that verdict JSON is not cut (default 4096);
- exactly one retry on unparsable output (Instructor re-asks with the validation error);
- token usage counted from the ``usage`` block of every response.

A call that still fails raises :class:`JudgeError` with a reason the report shows.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # ragas' usage telemetry posts to the internet

from openai import APIConnectionError, APIStatusError, APITimeoutError, AsyncOpenAI
from pydantic import BaseModel
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.embeddings.openai_provider import OpenAIEmbeddings
from ragas.llms.base import InstructorBaseRagasLLM, llm_factory

from sleuth.evals.errors import EvalError

T = TypeVar("T", bound=BaseModel)


class JudgeError(EvalError):
    """A judge or embeddings call failed for good; ``reason`` is a short stable category."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class JudgeConfig:
    base_url: str
    model: str
    api_key: str = "sk-local"
    timeout_s: float = 120.0
    concurrency: int = 8
    max_tokens: int = 4096
    temperature: float = 0.0
    parse_retries: int = 1
    embeddings_base_url: str | None = None
    embeddings_model: str = "embedding"


@dataclass
class UsageMeter:
    """Token usage and request counts, read from each response's ``usage`` block."""

    judge_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedding_requests: int = 0
    embedding_tokens: int = 0
    by_status: dict[int, int] = field(default_factory=dict)

    async def on_response(self, response: httpx.Response) -> None:
        self.by_status[response.status_code] = self.by_status.get(response.status_code, 0) + 1
        await response.aread()
        try:
            usage = (response.json() or {}).get("usage") or {}
        except (ValueError, AttributeError):
            usage = {}
        if response.url.path.endswith("/embeddings"):
            self.embedding_requests += 1
            self.embedding_tokens += int(usage.get("prompt_tokens") or 0)
        else:
            self.judge_requests += 1
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "judge_requests": self.judge_requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "embedding_requests": self.embedding_requests,
            "embedding_tokens": self.embedding_tokens,
        }


def _classify(exc: BaseException) -> JudgeError:
    name = type(exc).__name__
    text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else name
    if isinstance(exc, asyncio.TimeoutError | APITimeoutError):
        return JudgeError("timeout", text)
    if isinstance(exc, APIConnectionError):
        return JudgeError("connection", text)
    if isinstance(exc, APIStatusError):
        return JudgeError(f"http_{exc.status_code}", text)
    if name == "IncompleteOutputException":
        return JudgeError("truncated", "output hit max_tokens; raise --judge-max-tokens")
    if name in {"InstructorRetryException", "ValidationError", "JSONDecodeError"}:
        return JudgeError("unparsable", text)
    return JudgeError("error", f"{name}: {text}")


class GuardedJudge(InstructorBaseRagasLLM):
    """A ragas Instructor LLM behind our semaphore and timeout, failing with :class:`JudgeError`."""

    def __init__(
        self, inner: InstructorBaseRagasLLM, limit: asyncio.Semaphore, timeout_s: float
    ) -> None:
        self.inner = inner
        self.limit = limit
        self.timeout_s = timeout_s
        self.calls = 0

    def generate(self, prompt: str, response_model: type[T]) -> T:
        raise TypeError("GuardedJudge is async only: use agenerate()")

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        async with self.limit:
            self.calls += 1
            try:
                result: T = await asyncio.wait_for(
                    self.inner.agenerate(prompt, response_model), self.timeout_s
                )
            except Exception as exc:
                raise _classify(exc) from exc
        return result


class GuardedEmbeddings(BaseRagasEmbedding):
    """ragas' OpenAI embeddings behind a semaphore and a timeout."""

    def __init__(self, inner: OpenAIEmbeddings, limit: asyncio.Semaphore, timeout_s: float) -> None:
        super().__init__()
        self.inner = inner
        self.limit = limit
        self.timeout_s = timeout_s

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        raise TypeError("GuardedEmbeddings is async only")

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        async with self.limit:
            try:
                out: list[float] = await asyncio.wait_for(
                    self.inner.aembed_text(text, **kwargs), self.timeout_s
                )
            except Exception as exc:
                raise _classify(exc) from exc
        return out

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        async with self.limit:
            try:
                out: list[list[float]] = await asyncio.wait_for(
                    self.inner.aembed_texts(texts, **kwargs), self.timeout_s
                )
            except Exception as exc:
                raise _classify(exc) from exc
        return out


@dataclass
class JudgeBundle:
    """Everything a run needs; ``aclose()`` releases the HTTP clients."""

    llm: GuardedJudge
    embeddings: GuardedEmbeddings
    meter: UsageMeter
    config: JudgeConfig
    _http: list[httpx.AsyncClient]

    async def aclose(self) -> None:
        for client in self._http:
            await client.aclose()


def _openai(
    base_url: str, cfg: JudgeConfig, meter: UsageMeter
) -> tuple[AsyncOpenAI, httpx.AsyncClient]:
    http = httpx.AsyncClient(
        timeout=cfg.timeout_s,
        limits=httpx.Limits(max_connections=max(1, cfg.concurrency) * 2),
        event_hooks={"response": [meter.on_response]},
    )
    client = AsyncOpenAI(
        base_url=base_url,
        api_key=cfg.api_key,
        max_retries=0,
        timeout=cfg.timeout_s,
        http_client=http,
    )
    return client, http


def build_judge(cfg: JudgeConfig) -> JudgeBundle:
    """The guarded judge and embeddings for ``cfg`` (call inside the running event loop)."""
    meter = UsageMeter()
    chat, http_chat = _openai(cfg.base_url, cfg, meter)
    inner = llm_factory(
        cfg.model,
        client=chat,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        max_retries=1 + cfg.parse_retries,
    )
    emb_url = cfg.embeddings_base_url or cfg.base_url
    if emb_url == cfg.base_url:
        emb_client, http_emb = chat, http_chat
        clients = [http_chat]
    else:
        emb_client, http_emb = _openai(emb_url, cfg, meter)
        clients = [http_chat, http_emb]
    limit = asyncio.Semaphore(max(1, cfg.concurrency))
    return JudgeBundle(
        llm=GuardedJudge(inner, limit, cfg.timeout_s),
        embeddings=GuardedEmbeddings(
            OpenAIEmbeddings(client=emb_client, model=cfg.embeddings_model),
            asyncio.Semaphore(max(1, cfg.concurrency)),
            cfg.timeout_s,
        ),
        meter=meter,
        config=cfg,
        _http=clients,
    )


def describe(cfg: JudgeConfig) -> dict[str, Any]:
    """The run configuration as recorded in results (no API key)."""
    data = dict(cfg.__dict__)
    data.pop("api_key", None)
    out: dict[str, Any] = json.loads(json.dumps(data))
    return out
