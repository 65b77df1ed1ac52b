"""The agent's HTTP API (FastAPI).

``POST /v1/query``             {"question": ...} → {"answer", "citations", "trace"} (and
                               ``"sleuth": {"traceId"}`` when the request is traced; and
                               ``"approval"`` when the run waits for a person: the question
                               ``approve apr_...`` / ``reject apr_...: why`` decides)
``POST /v1/chat/completions``  OpenAI-compatible (JSON or SSE); the agent's loop runs behind it
``GET  /v1/models``            the agent, as one model
``GET  /v1/eval/first-step``   what a run's first model call sends besides the question (system
                               prompt, tools, model options): callers granted ``evaluation``
                               only (:mod:`sleuth.agent.firststep`)
``GET  /healthz`` ``/readyz``  liveness; readiness (the model server answers, or the router
                               can stand in: ``{"status": "degraded: ..."}``)
``GET  /metrics``              Prometheus exposition (OpenMetrics, with exemplars, when asked)
``GET  /.well-known/agent-card.json``, ``POST /a2a``   the agent as an A2A agent
                               (:mod:`sleuth.agent.a2a_api`; ``a2a.enabled``)

Every error is JSON ``{"error": {"message", "type", "field"}}``
(:mod:`sleuth.core.http.error_shapes`), unknown routes and methods included. Requests pass
:class:`~sleuth.core.http.request_guard.RequestGuard` (body size and read time; a client that
leaves cancels its run) and
:mod:`sleuth.agent.request_checks` (strict JSON, question and history limits, the prompt against the
model's context): 400/415/422 name the field, 413 an oversized body or prompt, 408 a body too
slow to arrive, 429 (with Retry-After) the ``maxConcurrentRequests`` limit.

With tracing on (:mod:`sleuth.core.tracing`), every request that runs the loop is one trace
(:mod:`sleuth.agent.reqspan`); its id comes back in ``X-Sleuth-Trace-Id`` and the body's
``sleuth.traceId``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException
from starlette.types import Scope

from sleuth.agent.a2a_api import a2a_routes
from sleuth.agent.access.caller import SCOPE_KEY, Caller, current_caller
from sleuth.agent.access.control import AccessControl, endpoint_of
from sleuth.agent.access.middleware import AccessGuard
from sleuth.agent.errors import RequestRejected
from sleuth.agent.evalwake import wake_router
from sleuth.agent.firststep import first_step_router
from sleuth.agent.metrics import exposition
from sleuth.agent.openai_api import router as openai_router
from sleuth.agent.request_checks import Conversation, HistoryMessage, read_json
from sleuth.agent.service import AgentService, Overloaded
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.access_config import AccessConfig
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.http.error_shapes import error_body, http_exception, overloaded
from sleuth.core.http.request_guard import HttpLimits, RequestGuard
from sleuth.core.tracing import Tracing, TracingSettings

log = logging.getLogger("sleuth.agent")
LOOP_PATHS = frozenset({"/v1/query", "/v1/chat/completions"})  # the routes that run the loop
_DENY_ALL = AccessConfig()  # before the service starts: no caller is admitted


class QueryMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The user's question.")
    history: list[QueryMessage] = Field(
        default_factory=list, description="Earlier turns of the conversation."
    )


def service_of(request: Request) -> AgentService:
    service: AgentService = request.app.state.service
    return service


query_router = APIRouter()


def refused(
    service: AgentService, exc: RequestRejected, caller: Caller, endpoint: str = "query"
) -> Response:
    """The error response of a refused request, counted and audited."""
    service.rejected(exc.status)
    service.access.refused(caller, endpoint, "invalid", None)
    return error_body(exc.status, str(exc), exc.kind, exc.field)


@query_router.post("/v1/query", response_model=None)
async def query(request: Request, caller: Annotated[Caller, Depends(current_caller)]) -> Response:
    service = service_of(request)
    try:
        body = await read_json(request, QueryRequest)
        conversation = Conversation(
            question=body.question,
            history=[HistoryMessage(m.role, m.content) for m in body.history],
            question_field="question",
            history_field="history",
            history_count=len(body.history),
        )
        service.check(conversation)
    except RequestRejected as exc:
        return refused(service, exc, caller)
    span = service.request_span("query", request.headers)
    try:
        sample = service.sample_of(caller, request.headers)
        with span.running():
            result = await service.answer(
                conversation.question, conversation.history_dicts(), "query", sample, caller
            )
    except Overloaded as exc:
        span.fail("overloaded")
        service.access.refused(caller, "query", "overloaded", conversation.question)
        return overloaded(str(exc), exc.retry_after_s)
    span.finish(result, conversation.question)
    payload: dict[str, object] = {"answer": result.answer, "citations": result.citations}
    if result.approval is not None:
        payload["approval"] = result.approval.as_json()
    if caller.trace:  # raw tool output: only for callers granted it
        payload["trace"] = result.trace.model_dump(mode="json", by_alias=True)
    if span.trace_id:
        payload["sleuth"] = span.body()
    return JSONResponse(payload, headers=span.headers())


health_router = APIRouter()


@health_router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health_router.get("/readyz", response_model=None)
async def readyz(request: Request) -> Response:
    ready, status = await service_of(request).readiness()
    if not ready:
        return error_body(503, status, "not_ready")
    return JSONResponse({"status": status})


@health_router.get("/metrics")
async def metrics(request: Request) -> Response:
    registry = service_of(request).metrics.registry
    body, content_type = exposition(registry, request.headers.get("accept"))
    return Response(body, media_type=content_type)


async def _internal_error(request: Request, exc: Exception) -> Response:
    """An unexpected failure: logged whole, answered without its detail."""
    log.error("unhandled error on %s", request.url.path, exc_info=exc)
    return error_body(500, "internal error (logged by the agent)", "error")


def create_app(
    config: AgentConfig,
    *,
    name: str = "sleuth-agent",
    tools: dict[str, BoundTool] | None = None,
    tracing: Tracing | TracingSettings | None = None,
    audit_sink: Callable[[str], None] | None = None,
) -> FastAPI:
    """The agent service for ``config``; ``tools`` replaces the configured tools (tests);
    ``tracing``: the settings of the tracer the service starts and stops, or a tracer to use;
    ``audit_sink``: where audit records go, one line each (default: standard output)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = AgentService(
            config, name=name, tools=tools, tracing=tracing, audit_sink=audit_sink
        )
        app.state.service = service
        if config.a2a.enabled:  # the card names the bound tools: mounted once they are bound
            app.router.routes.extend(a2a_routes(service))
        await service.start()
        try:
            yield
        finally:
            await service.aclose()

    def current() -> AgentService | None:
        service: AgentService | None = getattr(app.state, "service", None)
        return service

    def on_reject(reason: str) -> None:
        if (service := current()) is not None:
            service.metrics.rejected_requests.labels(service.name, reason).inc()

    def on_disconnect() -> None:
        if (service := current()) is not None:
            service.metrics.disconnects.labels(service.name).inc()

    def shed(scope: Scope) -> str | None:
        service = current()
        if service is None or scope["path"] not in LOOP_PATHS or not service.full():
            return None
        service.rejected(429)
        caller = scope.get(SCOPE_KEY)
        if isinstance(caller, Caller):
            service.access.refused(caller, endpoint_of(scope["path"]), "overloaded", None)
        return str(Overloaded(service.config.max_concurrent_requests))

    def access() -> AccessControl:
        service = current()
        if service is None:  # a request before the lifespan started: nobody is admitted
            return closed
        return service.access

    def unauthenticated(path: str) -> None:
        access().unauthenticated(path)

    closed = AccessControl(
        config.access or _DENY_ALL,
        agent=name,
        max_concurrent=config.max_concurrent_requests,
        registry=CollectorRegistry(),
        audit_sink=audit_sink,
    )
    app = FastAPI(title="sleuth agent", lifespan=lifespan)
    app.add_exception_handler(HTTPException, http_exception)
    app.add_exception_handler(Exception, _internal_error)
    app.add_middleware(
        RequestGuard,
        limits=HttpLimits.of(config.limits),
        on_reject=on_reject,
        on_disconnect=on_disconnect,
        shed=shed,
    )
    # Outermost: the caller is resolved before the body is read or anything else runs.
    app.add_middleware(
        AccessGuard,
        authenticator=lambda: access().authenticator,
        on_refused=unauthenticated,
    )
    app.include_router(query_router)
    app.include_router(openai_router)
    app.include_router(health_router)
    app.include_router(first_step_router)
    app.include_router(wake_router)
    return app
