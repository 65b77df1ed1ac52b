"""The scripted server's HTTP application: the OpenAI wire format, answers taken from a scenario.

Routes: ``POST /v1/chat/completions`` (JSON or server-sent events when ``stream`` is true),
``GET /v1/models``, ``POST /v1/embeddings``, ``POST /rerank`` (text-embeddings-inference's form,
or the Cohere/Jina form when the body has ``documents``), ``POST /v1/rerank`` and
``POST /v2/rerank`` (the Cohere/Jina form vLLM serves), ``GET /health``, ``GET /metrics`` (vLLM's
queue series: :mod:`sleuth.scripted.engine`), and control routes for
tests run against a server in another process: ``GET /_scripted/requests`` (every chat request
received, in order; ``?kind=rerank`` for the rerank requests, ``?kind=traceparent`` for the
``traceparent`` header of each chat request, null when it had none), ``DELETE /_scripted/requests``
(forget them) and ``PUT /_scripted/scenario`` (replace the scenario). Chat requests with a
JSON Schema go through :mod:`sleuth.scripted.structured`.

With an API key (``ScriptState(api_key=...)``; ``sleuth scripted-model --api-key`` or
``VLLM_API_KEY``), every ``/v1/*`` and ``/v2/*`` request must carry it as
``Authorization: Bearer <key>``, as vLLM's ``--api-key`` asks; others get 401. ``/health`` and
the control routes stay open, as vLLM's health route does.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import random
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from sleuth.scripted.engine import METRICS_CONTENT_TYPE, Engine
from sleuth.scripted.scenario import (
    Scenario,
    ScriptedResponse,
    assistant_count,
    prompt_tokens,
)
from sleuth.scripted.structured import SchemaRefusal, structured

Responder = Callable[[dict[str, Any]], ScriptedResponse | None]


class ScriptState:
    """The scenario in force, the sequential cursor, and the log of received requests."""

    def __init__(
        self,
        scenario: Scenario,
        responder: Responder | None = None,
        api_key: str | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.scenario = scenario
        self.engine = engine or Engine()  # the queue behind vllm:num_requests_* (engine.py)
        self.responder = responder
        self.api_key = api_key or None  # the bearer token the API routes require, if any
        self.unauthorized = 0  # API requests refused for a missing or wrong key
        self.requests: list[dict[str, Any]] = []
        self.rerank_requests: list[dict[str, Any]] = []
        self.traceparents: list[str | None] = []  # each chat request's W3C traceparent header
        self._cursor = 0
        self._lock = threading.Lock()

    def replace(self, scenario: Scenario) -> None:
        with self._lock:
            self.scenario = scenario
            self._cursor = 0

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()
            self.rerank_requests.clear()
            self.traceparents.clear()

    def lock(self) -> threading.Lock:
        return self._lock

    def select(self, request: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            scenario = self.scenario
            if self.responder is not None:
                chosen = self.responder(request)
                if chosen is not None:
                    return chosen
            for rule in scenario.rules:
                if rule.match.matches(request):
                    return rule.response
            if scenario.turn_selection == "sequential":
                index = self._cursor
                self._cursor += 1
            else:
                index = assistant_count(request.get("messages") or [])
            if index < len(scenario.turns):
                return scenario.turns[index]
            return scenario.fallback


def _error(status: int, message: str, param: str | None = None) -> JSONResponse:
    kind = "invalid_request_error" if status < 500 else "server_error"
    body = {"error": {"message": message, "type": kind, "param": param, "code": status}}
    return JSONResponse(body, status_code=status)


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size = math.ceil(len(text) / pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


class _Completion:
    """One scripted completion rendered in both wire forms."""

    def __init__(self, request: dict[str, Any], response: ScriptedResponse, model: str) -> None:
        self.request = request
        self.response = response
        self.model = model
        self.id = f"chatcmpl-{uuid.uuid4().hex[:16]}"
        self.created = int(time.time())
        self.prompt_tokens = prompt_tokens(request)
        self.completion_tokens = response.estimated_completion_tokens()
        self.call_ids = [c.id or f"call_{uuid.uuid4().hex[:12]}" for c in response.tool_calls]
        self.finish_reason = response.finish_reason or (
            "tool_calls" if response.tool_calls else "stop"
        )

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.response.content}
        if self.response.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()},
                }
                for call_id, call in zip(self.call_ids, self.response.tool_calls, strict=True)
            ]
        return message

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "scripted",
            "choices": [
                {
                    "index": 0,
                    "message": self.message(),
                    "finish_reason": self.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": self.usage(),
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None) -> str:
        body = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }
        return f"data: {json.dumps(body, ensure_ascii=False)}\n\n"

    def deltas(self) -> list[dict[str, Any]]:
        """Content pieces, then per call a header delta and argument fragments."""
        budget = max(1, self.completion_tokens)
        out: list[dict[str, Any]] = [
            {"content": piece} for piece in _split(self.response.content or "", budget)
        ]
        for index, (call_id, call) in enumerate(
            zip(self.call_ids, self.response.tool_calls, strict=True)
        ):
            head = {"index": index, "id": call_id, "type": "function"}
            out.append({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]})
            for fragment in _split(call.arguments_text(), 4):
                out.append({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
        return out


async def _sleep_until(deadline: float) -> None:
    """Sleep until the event loop's clock reads ``deadline`` (no drift across many sleeps)."""
    delay = deadline - asyncio.get_running_loop().time()
    if delay > 0:
        await asyncio.sleep(delay)


async def _stream(
    completion: _Completion, first_at: float, per_token_s: float, usage: bool
) -> AsyncIterator[str]:
    """Chunks on schedule; chunks already due (a busy server) go out in one write."""
    deltas = completion.deltas()
    gap = per_token_s * max(0, completion.completion_tokens - 1) / max(1, len(deltas) - 1)
    role = completion.chunk({"role": "assistant", "content": ""})
    pending = [(first_at + i * gap, completion.chunk(d)) for i, d in enumerate(deltas)]
    cut = completion.response.cut_after
    if cut is not None:  # the server dies after these: no finish chunk, no [DONE]
        pending = pending[:cut]
    await _sleep_until(first_at)
    out = [role]
    loop = asyncio.get_running_loop()
    index = 0
    while index < len(pending):
        due, text = pending[index]
        if due > loop.time() and out:
            yield "".join(out)
            out = []
            await _sleep_until(due)
        out.append(text)
        index += 1
    if cut is not None:
        yield "".join(out)
        return
    out.append(completion.chunk({}, completion.finish_reason))
    if usage:
        body = {
            "id": completion.id,
            "object": "chat.completion.chunk",
            "created": completion.created,
            "model": completion.model,
            "choices": [],
            "usage": completion.usage(),
        }
        out.append(f"data: {json.dumps(body)}\n\n")
    out.append("data: [DONE]\n\n")
    yield "".join(out)


def _hash_vector(text: str, dimensions: int) -> list[float]:
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class _RequireKey:
    """Refuse API requests without ``Authorization: Bearer <state.api_key>`` (401)."""

    def __init__(self, app: ASGIApp, state: ScriptState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self.state.api_key
        path = str(scope.get("path", ""))
        if key is None or scope["type"] != "http" or not path.startswith(("/v1/", "/v2/")):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        if hmac.compare_digest(given.encode(), f"Bearer {key}".encode()):
            await self.app(scope, receive, send)
            return
        with self.state.lock():
            self.state.unauthorized += 1
        await _error(401, "Unauthorized: a valid API key is required")(scope, receive, send)


def create_app(state: ScriptState) -> Starlette:
    """The ASGI application serving ``state``'s scenario."""

    async def chat(request: Request) -> Response:
        arrived = asyncio.get_running_loop().time()
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return _error(400, "request body must be a JSON object")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return _error(400, "messages: a non-empty list is required", "messages")
        with state.lock():
            state.traceparents.append(request.headers.get("traceparent"))
        scripted = state.select(body)
        scenario = state.scenario
        if scripted.status >= 400:
            await _sleep_until(arrived + scripted.delay_ms / 1000)
            return _error(scripted.status, scripted.error_message)
        try:
            scripted = structured(body, scripted)
        except SchemaRefusal as exc:
            return _error(400, str(exc), "response_format")
        completion = _Completion(body, scripted, str(body.get("model") or scenario.model))
        engine = state.engine
        profile = scenario.latency
        per_token_s = profile.per_token_ms / 1000

        def first_token_at() -> float:  # from when it runs, as in vLLM's scheduler
            started = max(arrived, asyncio.get_running_loop().time())
            return started + (scripted.delay_ms + profile.ttft_ms(completion.prompt_tokens)) / 1000

        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

            async def chunks() -> AsyncIterator[str]:
                await engine.admit()
                try:
                    async for chunk in _stream(
                        completion, first_token_at(), per_token_s, include_usage
                    ):
                        yield chunk
                finally:
                    engine.done()

            return StreamingResponse(chunks(), media_type="text/event-stream")
        await engine.admit()
        try:
            last = first_token_at() + per_token_s * max(0, completion.completion_tokens - 1)
            await _sleep_until(last)
        finally:
            engine.done()
        return JSONResponse(completion.body())

    async def models(_: Request) -> Response:
        created = int(time.time())
        entry = {
            "id": state.scenario.model,
            "object": "model",
            "created": created,
            "owned_by": "sleuth-scripted",
        }
        return JSONResponse({"object": "list", "data": [entry]})

    async def embeddings(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON")
        raw = body.get("input") if isinstance(body, dict) else None
        texts = [raw] if isinstance(raw, str) else raw
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "input: a string or a list of strings is required", "input")
        script = state.scenario.embeddings
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": script.vectors.get(text) or _hash_vector(text, script.dimensions),
            }
            for i, text in enumerate(texts)
        ]
        tokens = sum(max(1, len(t) // 4) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or state.scenario.model),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def rerank(request: Request) -> Response:
        """TEI's ``/rerank`` ({query, texts} → [{index, score}]) or the Cohere/Jina form vLLM
        serves ({model, query, documents, top_n} → {results: [{index, relevance_score}]})."""
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "request body is not valid JSON")
        cohere = request.url.path != "/rerank" or (isinstance(body, dict) and "documents" in body)
        field = "documents" if cohere else "texts"
        docs = body.get(field) if isinstance(body, dict) else None
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str) or not query:
            return _error(400, "query: a non-empty string is required", "query")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
            return _error(400, f"{field}: a non-empty list of strings is required", field)
        with state.lock():
            state.rerank_requests.append({"path": request.url.path, **body})
        script = state.scenario.rerank
        await asyncio.sleep(script.delay_ms / 1000)
        if script.status >= 400:
            return _error(script.status, "scripted rerank failure")
        scores = [script.score(query, d) for d in docs]
        order = sorted(range(len(docs)), key=lambda i: -scores[i])
        if script.malformed:
            order = [len(docs) + 5]
            scores.append(0.5)
            scores.extend([0.0] * 5)
        if not cohere:
            return JSONResponse([{"index": i, "score": scores[i]} for i in order])
        top_n = body.get("top_n")
        if isinstance(top_n, int) and top_n > 0:
            order = order[:top_n]
        tokens = sum(max(1, len(d) // 4) for d in docs) + len(query) // 4
        return JSONResponse(
            {
                "id": f"rerank-{uuid.uuid4().hex[:16]}",
                "model": str(body.get("model") or state.scenario.model),
                "usage": {"total_tokens": tokens},
                "results": [
                    {
                        "index": i,
                        "document": {"text": docs[i]} if i < len(docs) else None,
                        "relevance_score": scores[i],
                    }
                    for i in order
                ],
            }
        )

    async def health(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics(_: Request) -> Response:
        text = state.engine.exposition(state.scenario.model)
        return Response(text, media_type=METRICS_CONTENT_TYPE)

    async def requests_log(request: Request) -> Response:
        if request.method == "DELETE":
            state.clear_requests()
            return Response(status_code=204)
        if request.query_params.get("kind") == "rerank":
            return JSONResponse(list(state.rerank_requests))
        if request.query_params.get("kind") == "traceparent":
            return JSONResponse(list(state.traceparents))
        return JSONResponse(list(state.requests))

    async def put_scenario(request: Request) -> Response:
        try:
            state.replace(Scenario.model_validate(await request.json()))
        except ValueError as exc:
            return _error(400, f"scenario: {exc}")
        return Response(status_code=204)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/embeddings", embeddings, methods=["POST"]),
            Route("/rerank", rerank, methods=["POST"]),
            Route("/v1/rerank", rerank, methods=["POST"]),
            Route("/v2/rerank", rerank, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/_scripted/requests", requests_log, methods=["GET", "DELETE"]),
            Route("/_scripted/scenario", put_scenario, methods=["PUT"]),
        ]
    )
    app.add_middleware(_RequireKey, state=state)
    return app
