"""The judge and embeddings behind OpenAI-compatible endpoints, with our own guards.

ragas' collections metrics call ``llm.agenerate(prompt, ResponseModel)`` (JSON mode:
``response_format: json_object``, the schema in the system prompt) and
``embeddings.aembed_text(s)``. The judge client is :class:`~sleuth.scoring.direct.DirectJudge`
over the one model client (:mod:`sleuth.core.llm`) by default, or ragas' own ``llm_factory``
(Instructor over the OpenAI SDK and httpx) with ``client="instructor"``; embeddings come from
:class:`~sleuth.scoring.direct.DirectEmbeddings` (an OpenAI-compatible ``/embeddings`` endpoint,
httpx) or the local model. Around them we add what an SRE needs to trust a run:

- our concurrency limit towards the judge (:class:`EndpointLimit`, one per endpoint, shared by
  every metric and row, and by the model client and the httpx client of that endpoint);
- a timeout per request (the OpenAI client's own retries are off: we decide about retries);
- a max-token budget high enough that verdict JSON is not cut (default 4096);
- exactly one retry on unparsable output (a re-ask showing the validation error);
- token usage counted from the ``usage`` block of every response.

A call that still fails raises :class:`JudgeError` with a reason the report shows.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

import httpx

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")  # ragas' usage telemetry posts to the internet

from openai import APIConnectionError, APIStatusError, APITimeoutError
from pydantic import BaseModel
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import InstructorBaseRagasLLM, llm_factory

from sleuth.core.errors import ModelError
from sleuth.core.llm import ModelTurn, OpenAIChatModel
from sleuth.scoring.direct import DirectEmbeddings, DirectJudge
from sleuth.scoring.errors import JudgeError
from sleuth.scoring.local_embeddings import local_embeddings

__all__ = ["JudgeBundle", "JudgeConfig", "JudgeError", "build_judge"]

T = TypeVar("T", bound=BaseModel)

LOCAL_EMBEDDINGS = "local"
"""``embeddings_base_url`` value selecting the local all-MiniLM-L6-v2 model."""


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
    client: Literal["direct", "instructor"] = "direct"
    embeddings_base_url: str | None = None
    embeddings_model: str = "embedding"
    embeddings_api_key: str | None = None  # None: the judge's api_key


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

    def on_turn(self, turn: ModelTurn) -> None:
        """A judge call of the model client answered (HTTP 200)."""
        self.by_status[200] = self.by_status.get(200, 0) + 1
        self.judge_requests += 1
        self.prompt_tokens += turn.prompt_tokens
        self.completion_tokens += turn.completion_tokens

    def on_model_error(self, exc: ModelError) -> None:
        """A judge call of the model client failed; counted when the server answered."""
        if exc.status is not None:
            self.by_status[exc.status] = self.by_status.get(exc.status, 0) + 1
            self.judge_requests += 1

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
    if isinstance(exc, JudgeError):
        return exc
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


class EndpointLimit:
    """At most ``limit`` requests in flight to one endpoint: our concurrency limit.

    A slot is held from sending a request until its body is read, and only then: prompt
    rendering and response parsing (ragas, Instructor, the OpenAI client) happen outside it, so
    the endpoint sees exactly ``limit`` concurrent requests while work is queued. The clients'
    timeouts apply to the exchange itself, never to the wait for a slot.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._sem = asyncio.Semaphore(self.limit)
        self.requests = 0
        self.busy_s = 0.0  # summed time slots were held
        self.chat_requests = 0
        self.chat_busy_s = 0.0  # the same, for chat completions only

    @asynccontextmanager
    async def slot(self, *, chat: bool) -> AsyncIterator[None]:
        async with self._sem:
            self.requests += 1
            started = time.perf_counter()
            try:
                yield
            finally:
                held = time.perf_counter() - started
                self.busy_s += held
                if chat:
                    self.chat_requests += 1
                    self.chat_busy_s += held


class LimitedTransport(httpx.AsyncBaseTransport):
    """An httpx transport whose requests take a slot of the endpoint's :class:`EndpointLimit`."""

    def __init__(self, limit: EndpointLimit, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.limit = limit
        self.inner = inner or httpx.AsyncHTTPTransport(
            limits=httpx.Limits(max_connections=limit.limit, max_keepalive_connections=limit.limit)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        async with self.limit.slot(chat=request.url.path.endswith("/chat/completions")):
            response = await self.inner.handle_async_request(request)
            try:
                await response.aread()
            except BaseException:
                await response.aclose()
                raise
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class LimitedModel:
    """The direct judge's :class:`~sleuth.core.llm.ChatModel`: each call takes a slot of the
    endpoint's limit, and its usage goes to the meter."""

    def __init__(self, inner: OpenAIChatModel, limit: EndpointLimit, meter: UsageMeter) -> None:
        self.inner = inner
        self.name = inner.name
        self.tool_calling = inner.tool_calling
        self.limit = limit
        self.meter = meter

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelTurn:
        async with self.limit.slot(chat=True):
            try:
                turn = await self.inner.complete(messages, tools)
            except ModelError as exc:
                self.meter.on_model_error(exc)
                raise
        self.meter.on_turn(turn)
        return turn

    async def aclose(self) -> None:
        await self.inner.aclose()


class GuardedJudge(InstructorBaseRagasLLM):
    """A ragas Instructor LLM whose failures become :class:`JudgeError` with a reason."""

    def __init__(self, inner: InstructorBaseRagasLLM) -> None:
        self.inner = inner
        self.calls = 0

    def generate(self, prompt: str, response_model: type[T]) -> T:
        raise TypeError("GuardedJudge is async only: use agenerate()")

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        self.calls += 1
        try:
            result: T = await self.inner.agenerate(prompt, response_model)
        except Exception as exc:
            raise _classify(exc) from exc
        return result


class GuardedEmbeddings(BaseRagasEmbedding):
    """ragas embeddings (OpenAI-compatible, or the local model) whose failures become
    :class:`JudgeError`."""

    def __init__(self, inner: BaseRagasEmbedding) -> None:
        super().__init__()
        self.inner = inner

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        raise TypeError("GuardedEmbeddings is async only")

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        try:
            out: list[float] = await self.inner.aembed_text(text, **kwargs)
        except Exception as exc:
            raise _classify(exc) from exc
        return out

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        try:
            out: list[list[float]] = await self.inner.aembed_texts(texts, **kwargs)
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
    limits: list[EndpointLimit]
    _http: list[httpx.AsyncClient]
    _models: list[LimitedModel] = field(default_factory=list)

    async def aclose(self) -> None:
        for model in self._models:
            await model.aclose()
        for client in self._http:
            await client.aclose()


def _http(cfg: JudgeConfig, meter: UsageMeter, limit: EndpointLimit) -> httpx.AsyncClient:
    """An httpx client towards one endpoint, behind that endpoint's limit, metering usage."""
    return httpx.AsyncClient(
        timeout=cfg.timeout_s,
        transport=LimitedTransport(limit),
        event_hooks={"response": [meter.on_response]},
    )


def _direct_model(cfg: JudgeConfig, meter: UsageMeter, limit: EndpointLimit) -> LimitedModel:
    """The direct judge's model client: JSON mode, our budget, no streaming, no retries."""
    model = OpenAIChatModel(
        cfg.base_url,
        cfg.model,
        timeout_s=cfg.timeout_s,
        stream=False,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        api_key=cfg.api_key,
        max_connections=limit.limit,
        response_format={"type": "json_object"},
    )
    return LimitedModel(model, limit, meter)


def _instructor_llm(cfg: JudgeConfig, http: httpx.AsyncClient) -> InstructorBaseRagasLLM:
    """ragas' own route: ``llm_factory`` with an AsyncOpenAI client over our HTTP client."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(
        base_url=cfg.base_url,
        api_key=cfg.api_key,
        max_retries=0,
        timeout=cfg.timeout_s,
        # openai >= 3 types this as an httpx2 client; the httpx client works at run time
        # (tests/evals/test_ragas_worked_example.py runs the worked example through it).
        http_client=cast(Any, http),
    )
    return llm_factory(
        cfg.model,
        client=client,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        max_retries=1 + cfg.parse_retries,
    )


def build_judge(cfg: JudgeConfig) -> JudgeBundle:
    """The guarded judge and embeddings for ``cfg`` (call inside the running event loop).

    One concurrency limit per endpoint: when embeddings share the judge's URL they share its
    limit too.
    """
    meter = UsageMeter()
    limit_chat = EndpointLimit(cfg.concurrency)
    http_chat = _http(cfg, meter, limit_chat)
    inner: InstructorBaseRagasLLM
    models: list[LimitedModel] = []
    if cfg.client == "instructor":
        inner = _instructor_llm(cfg, http_chat)
    else:
        models.append(_direct_model(cfg, meter, limit_chat))
        inner = DirectJudge(models[0], max_tokens=cfg.max_tokens, parse_retries=cfg.parse_retries)
    emb_url = cfg.embeddings_base_url or cfg.base_url
    emb_key = cfg.embeddings_api_key or cfg.api_key
    emb: BaseRagasEmbedding
    if emb_url == LOCAL_EMBEDDINGS:
        clients, limits = [http_chat], [limit_chat]
        emb = local_embeddings()
    elif emb_url == cfg.base_url:
        clients, limits = [http_chat], [limit_chat]
        emb = DirectEmbeddings(http_chat, emb_url, cfg.embeddings_model, api_key=emb_key)
    else:
        limit_emb = EndpointLimit(cfg.concurrency)
        http_emb = _http(cfg, meter, limit_emb)
        clients, limits = [http_chat, http_emb], [limit_chat, limit_emb]
        emb = DirectEmbeddings(http_emb, emb_url, cfg.embeddings_model, api_key=emb_key)
    return JudgeBundle(
        llm=GuardedJudge(inner),
        embeddings=GuardedEmbeddings(emb),
        meter=meter,
        config=cfg,
        limits=limits,
        _http=clients,
        _models=models,
    )


def describe(cfg: JudgeConfig) -> dict[str, Any]:
    """The run configuration as recorded in results (no API key)."""
    data = dict(cfg.__dict__)
    data.pop("api_key", None)
    data.pop("embeddings_api_key", None)
    out: dict[str, Any] = json.loads(json.dumps(data))
    return out
