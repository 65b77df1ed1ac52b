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
JSON Schema go through :mod:`sleuth.scripted.structured`. The state it serves is
:mod:`sleuth.scripted.state`, the wire format :mod:`sleuth.scripted.wire`, the retrieval routes
:mod:`sleuth.scripted.retrieval`.

With an API key (``ScriptState(api_key=...)``; ``sleuth scripted-model --api-key`` or
``VLLM_API_KEY``), every ``/v1/*`` and ``/v2/*`` request must carry it as
``Authorization: Bearer <key>``, as vLLM's ``--api-key`` asks; others get 401. ``/health`` and
the control routes stay open, as vLLM's health route does.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import AsyncIterator
from functools import partial

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from sleuth.scripted.engine import METRICS_CONTENT_TYPE
from sleuth.scripted.retrieval import embeddings, rerank
from sleuth.scripted.scenario import Scenario
from sleuth.scripted.state import ScriptState
from sleuth.scripted.structured import SchemaRefusal, structured
from sleuth.scripted.wire import Completion, error, sleep_until, stream_chunks


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
        await error(401, "Unauthorized: a valid API key is required")(scope, receive, send)


def create_app(state: ScriptState) -> Starlette:
    """The ASGI application serving ``state``'s scenario."""

    async def chat(request: Request) -> Response:
        arrived = asyncio.get_running_loop().time()
        try:
            body = await request.json()
        except ValueError:
            return error(400, "request body is not valid JSON")
        if not isinstance(body, dict):
            return error(400, "request body must be a JSON object")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return error(400, "messages: a non-empty list is required", "messages")
        with state.lock():
            state.traceparents.append(request.headers.get("traceparent"))
        scripted = state.select(body)
        scenario = state.scenario
        if scripted.status >= 400:
            await sleep_until(arrived + scripted.delay_ms / 1000)
            return error(scripted.status, scripted.error_message)
        try:
            scripted = structured(body, scripted)
        except SchemaRefusal as exc:
            return error(400, str(exc), "response_format")
        completion = Completion(body, scripted, str(body.get("model") or scenario.model))
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
                    async for chunk in stream_chunks(
                        completion, first_token_at(), per_token_s, include_usage
                    ):
                        yield chunk
                finally:
                    engine.done()

            return StreamingResponse(chunks(), media_type="text/event-stream")
        await engine.admit()
        try:
            last = first_token_at() + per_token_s * max(0, completion.completion_tokens - 1)
            await sleep_until(last)
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
            return error(400, f"scenario: {exc}")
        return Response(status_code=204)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/embeddings", partial(embeddings, state), methods=["POST"]),
            Route("/rerank", partial(rerank, state), methods=["POST"]),
            Route("/v1/rerank", partial(rerank, state), methods=["POST"]),
            Route("/v2/rerank", partial(rerank, state), methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/metrics", metrics, methods=["GET"]),
            Route("/_scripted/requests", requests_log, methods=["GET", "DELETE"]),
            Route("/_scripted/scenario", put_scenario, methods=["PUT"]),
        ]
    )
    app.add_middleware(_RequireKey, state=state)
    return app


__all__ = ["create_app"]
