"""The agent's HTTP API (FastAPI).

``POST /v1/query``             {"question": ...} → {"answer", "citations", "trace"}
``POST /v1/chat/completions``  OpenAI-compatible (JSON or SSE); the agent's loop runs behind it
``GET  /v1/models``            the agent, as one model
``GET  /healthz`` ``/readyz``  liveness; readiness (the model server answers, or the router
                               can stand in: ``{"status": "degraded: ..."}``)
``GET  /metrics``              Prometheus exposition

Errors are JSON ``{"error": {"message", "type", "field"}}`` (:mod:`sleuth.agent.http_errors`):
422 names the offending field, 429 (with Retry-After) means the agent is at
``maxConcurrentRequests``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field

from sleuth.agent.http_errors import error_body, overloaded
from sleuth.agent.openai_api import router as openai_router
from sleuth.agent.service import AgentService, Overloaded
from sleuth.agent.toolrun import BoundTool
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.names import EVAL_HEADER


class HistoryMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: str = Field(pattern="^(user|assistant)$")
    content: str


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=20000, description="The user's question.")
    history: list[HistoryMessage] = Field(
        default_factory=list, max_length=50, description="Earlier turns of the conversation."
    )


def service_of(request: Request) -> AgentService:
    service: AgentService = request.app.state.service
    return service


query_router = APIRouter()


@query_router.post("/v1/query", response_model=None)
async def query(body: QueryRequest, request: Request) -> Response:
    service = service_of(request)
    history = [m.model_dump() for m in body.history]
    try:
        sample = EVAL_HEADER.lower() not in request.headers
        result = await service.answer(body.question, history, "query", sample)
    except Overloaded as exc:
        return overloaded(exc)
    payload = {
        "answer": result.answer,
        "citations": result.citations,
        "trace": result.trace.model_dump(mode="json", by_alias=True),
    }
    return JSONResponse(payload)


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
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


async def _validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors: list[Any] = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    loc = [str(part) for part in first.get("loc", ()) if part != "body"]
    field = ".".join(loc) or None
    message = f"{field}: {first.get('msg')}" if field else str(first.get("msg"))
    service: AgentService | None = getattr(request.app.state, "service", None)
    if service is not None:
        service.metrics.rejected_requests.labels(service.name, "invalid").inc()
    return error_body(422, message, "invalid_request_error", field)


def create_app(
    config: AgentConfig,
    *,
    name: str = "sleuth-agent",
    tools: dict[str, BoundTool] | None = None,
) -> FastAPI:
    """The agent service for ``config``; ``tools`` replaces the configured tools (tests)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service = AgentService(config, name=name, tools=tools)
        app.state.service = service
        await service.start()
        try:
            yield
        finally:
            await service.aclose()

    app = FastAPI(title="sleuth agent", lifespan=lifespan)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.include_router(query_router)
    app.include_router(openai_router)
    app.include_router(health_router)
    return app
