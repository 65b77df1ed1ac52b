"""The tool service's HTTP app: MCP streamable HTTP, a plain JSON endpoint, health and metrics.

Routes::

    POST /mcp                     MCP streamable HTTP (stateless, JSON): tools/list, tools/call
                                  (GET and DELETE: 405, no SSE stream and no session)
    GET  /v1/tools                the served tools as OpenAI ``tools[]`` entries
    POST /v1/tools/{name}/call    {"arguments": {...}} → {"content", "citations"} or {"error"}
    GET  /healthz                 the process is alive
    GET  /readyz                  the backend (database, vector store, provider) answers
    GET  /metrics                 Prometheus exposition

Tool errors keep their kind on both transports (see :mod:`sleuth.tools.wire`): on the JSON
endpoint as HTTP 422 (argument), 503 (unavailable, misconfigured; busy with ``Retry-After``) or 500
(other); over MCP as a result with ``isError`` and the same JSON in its text. Every other error
(a body that is not JSON, an unknown route) has the shape of :mod:`sleuth.core.http.error_shapes`.
Bodies are read by :func:`~sleuth.core.http.json_body.parse_json_body` on both transports (UTF-8,
nesting at most 64 levels, no lone surrogate: 400, or 422 naming the field); on ``/mcp``
through :class:`~sleuth.core.http.jsonrpc_intake.JsonRpcIntake`, whose refusals are JSON-RPC
errors (-32700, -32600), before the MCP SDK parses anything.

Identical calls in flight share one execution (:class:`~sleuth.core.singleflight.SingleFlight`);
at most ``maxConcurrentCalls`` executions run at once, beyond which a call is refused at once as
``busy``. Requests pass :class:`~sleuth.core.http.request_guard.RequestGuard`: a caller that goes
away (the agent's tool timeout) cancels its call — and the SQL statement under it — unless another
caller still waits for the same execution.

Traces: each call is a ``tool <name>`` span (kind SERVER) whose parent is the caller's
``traceparent`` (the agent's ``execute_tool`` span), on both transports. The tool adds what it
did — the SQL guard's verdict, the statement's duration and row count, the vector hits' chunk
ids — never argument or parameter values, nor credentials.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import mcp.types as mcp_types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from sleuth.core import spans
from sleuth.core.http.error_shapes import error_body, http_exception
from sleuth.core.http.json_body import JsonBodyError, parse_json_body
from sleuth.core.http.jsonrpc_intake import JsonRpcIntake
from sleuth.core.http.request_guard import HttpLimits, RequestGuard
from sleuth.core.names import TRACE_SPANS_DROPPED
from sleuth.core.singleflight import SingleFlight
from sleuth.core.tracing import Tracing, TracingSettings, extract_context, start_tracing
from sleuth.tools.base import ToolBusy, ToolError, ToolOutput
from sleuth.tools.build import ServiceTools
from sleuth.tools.service.config import describe
from sleuth.tools.wire import (
    canonical_arguments,
    error_json,
    error_kind,
    error_to_json,
    output_to_json,
)

log = logging.getLogger("sleuth.toolservice")

_STATUS = {"argument": 422, "unavailable": 503, "busy": 503, "misconfigured": 503, "error": 500}
DEFAULT_MAX_CONCURRENT_CALLS = 32


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter(
            "sleuth_tool_service_calls",
            "Tool calls served, by tool, transport and outcome.",
            ["tool", "transport", "outcome"],
            registry=self.registry,
        )
        self.seconds = Histogram(
            "sleuth_tool_service_call_seconds",
            "Duration of tool calls served.",
            ["tool"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.ready = Gauge(
            "sleuth_tool_service_ready", "1 when the backend answers.", registry=self.registry
        )
        self.executing = Gauge(
            "sleuth_tool_service_executions_in_flight",
            "Tool executions running (identical calls share one).",
            registry=self.registry,
        )
        self.rejected = Counter(
            "sleuth_tool_service_rejected_requests",
            "Requests refused before a tool ran (too_large, slow_body) or abandoned by their "
            "client (client_gone).",
            ["reason"],
            registry=self.registry,
        )
        self.spans_dropped = Counter(
            TRACE_SPANS_DROPPED.removesuffix("_total"),
            "Spans never exported (reason: queue_full, export_failed, shutdown): the trace "
            "collector is down or too slow; calls are not slowed.",
            ["reason"],
            registry=self.registry,
        )


class ToolService:
    """Runs calls for both transports: shared executions, an execution limit, metrics."""

    def __init__(
        self,
        tools: ServiceTools,
        metrics: Metrics,
        max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
        tracing: Tracing | None = None,
    ) -> None:
        self.tools = tools
        self.metrics = metrics
        self.max_concurrent_calls = max_concurrent_calls
        self.executing = 0
        self.flights: SingleFlight[ToolOutput] = SingleFlight()
        self.tracing = tracing or Tracing.disabled()

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        transport: str,
        headers: Any = None,
    ) -> dict[str, Any]:
        """Run one call; ``headers``: the request's (for the caller's ``traceparent``)."""
        if not self.tracing.enabled:
            return await self._call(name, arguments, transport)
        parent: Context | None = extract_context(headers) if headers is not None else None
        with self.tracing.tracer.start_as_current_span(
            f"{spans.TOOL_SERVICE} {name}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={spans.TOOL_NAME: name, spans.TOOL_TRANSPORT: transport},
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await self._call(name, arguments, transport)
            except BaseException as exc:  # cancelled: the caller went away
                span.set_attribute(spans.TOOL_OUTCOME, "cancelled")
                spans.fail(span, exc)
                raise
            error = result.get("error")
            outcome = error.get("kind", "error") if isinstance(error, dict) else "ok"
            span.set_attribute(spans.TOOL_OUTCOME, outcome)
            if outcome != "ok":
                spans.fail(span, outcome)
            return result

    async def _call(self, name: str, arguments: dict[str, Any], transport: str) -> dict[str, Any]:
        tool = self.tools.tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self.tools.tools))
            self.metrics.calls.labels(name, transport, "unknown_tool").inc()
            return error_json(
                "argument", f"unknown tool {name!r}; this service serves {known}", name
            )
        key = (name, canonical_arguments(arguments))

        def finished() -> None:
            self.executing -= 1
            self.metrics.executing.set(self.executing)

        started = time.perf_counter()
        try:
            on_done = None
            if not self.flights.in_flight(key):  # a new execution: it needs a slot
                if self.executing >= self.max_concurrent_calls:
                    raise ToolBusy(
                        f"the {name} tool is busy: {self.executing} calls are running, the "
                        "limit of this service (maxConcurrentCalls); try again shortly",
                        tool=name,
                    )
                self.executing += 1
                self.metrics.executing.set(self.executing)
                on_done = finished
            output, shared = await self.flights.run(key, lambda: tool.call(arguments), on_done)
            if shared:
                trace.get_current_span().set_attribute(spans.TOOL_SHARED, True)
        except ToolError as err:
            self.metrics.calls.labels(name, transport, error_kind(err)).inc()
            return error_to_json(err, name)
        except asyncio.CancelledError:  # the caller went away (its timeout): nobody to answer
            self.metrics.calls.labels(name, transport, "cancelled").inc()
            raise
        except Exception:  # a bug or an unexpected backend failure: logged, never a raw 500
            log.exception("%s: the call failed unexpectedly", name)
            self.metrics.calls.labels(name, transport, "error").inc()
            return error_json("error", f"the {name} tool failed unexpectedly (logged)", name)
        finally:
            self.metrics.seconds.labels(name).observe(time.perf_counter() - started)
        self.metrics.calls.labels(name, transport, "shared" if shared else "ok").inc()
        return output_to_json(output)


def mcp_server(service: ToolService) -> Server[Any, Any]:
    server: Server[Any, Any] = Server("sleuth-tool-service")

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]
    async def list_tools() -> list[mcp_types.Tool]:
        return [
            mcp_types.Tool(
                name=tool.spec.name,
                description=tool.spec.description,
                inputSchema=tool.spec.parameters,
            )
            for tool in service.tools.tools.values()
        ]

    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]
    async def call_tool(name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        request = getattr(server.request_context, "request", None)  # the HTTP request
        result = await service.call(name, arguments, "mcp", getattr(request, "headers", None))
        text = json.dumps(result, ensure_ascii=False)
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=text)],
            isError="error" in result,
        )

    return server


class _McpEndpoint:
    """ASGI adapter so the MCP manager answers at exactly ``/mcp`` (no redirect to ``/mcp/``)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


Loader = Callable[[], Awaitable[ServiceTools]]


def _call_error(status: int, message: str, tool: str, field: str | None = None) -> Response:
    return error_body(status, message, "invalid_request_error", field, kind="argument", tool=tool)


def create_app(
    load: Loader,
    *,
    limits: HttpLimits | None = None,
    max_concurrent_calls: int = DEFAULT_MAX_CONCURRENT_CALLS,
    tracing: Tracing | TracingSettings | None = None,
) -> Starlette:
    """The app; ``load`` builds the tools when the app starts (pools open in its lifespan).
    ``tracing``: the settings of the tracer the app starts and stops, or a tracer to use."""
    metrics = Metrics()
    state: dict[str, Any] = {}

    def service() -> ToolService:
        svc: ToolService = state["service"]
        return svc

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        ok = await service().tools.ready()
        metrics.ready.set(1 if ok else 0)
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    async def metrics_endpoint(_: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    async def list_tools(_: Request) -> Response:
        return JSONResponse({"kind": service().tools.kind, "tools": describe(service().tools)})

    async def call(request: Request) -> Response:
        name = request.path_params["name"]
        try:
            body = parse_json_body(await request.body())
        except JsonBodyError as err:  # not UTF-8 or JSON, nested too deep, a lone surrogate
            return _call_error(err.status, str(err), name, err.field)
        arguments = body.get("arguments", {}) if isinstance(body, dict) else None
        if not isinstance(arguments, dict):
            message = 'the body must be {"arguments": {...}}'
            return _call_error(422, message, name, "arguments")
        result = await service().call(name, arguments, "json", request.headers)
        if "error" not in result:
            return JSONResponse(result)
        kind = result["error"]["kind"]
        headers = {"Retry-After": "1"} if kind == "busy" else None
        return JSONResponse(result, status_code=_STATUS[kind], headers=headers)

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        tools = await load()
        if isinstance(tracing, TracingSettings):
            tracer = start_tracing(tracing, lambda n, why: metrics.spans_dropped.labels(why).inc(n))
        else:
            tracer = tracing or Tracing.disabled()
        svc = ToolService(tools, metrics, max_concurrent_calls, tracer)
        state["service"] = svc
        manager = StreamableHTTPSessionManager(
            app=mcp_server(svc), json_response=True, stateless=True
        )
        mcp_endpoint.manager = manager
        try:
            async with manager.run():
                yield
        finally:
            await tools.aclose()
            if isinstance(tracing, TracingSettings):  # started here: flushed here, bounded
                await asyncio.to_thread(tracer.shutdown, 5.0)

    async def internal_error(request: Request, exc: Exception) -> Response:
        log.error("unhandled error on %s", request.url.path, exc_info=exc)
        return error_body(500, "internal error (logged by the tool service)", "error")

    mcp_endpoint = _McpEndpoint(None)  # type: ignore[arg-type]  # set in the lifespan
    routes = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics_endpoint),
        Route("/v1/tools", list_tools),
        Route("/v1/tools/{name}/call", call, methods=["POST"]),
        # POST only: stateless, the service has no session to delete and sends nothing of its
        # own, so a GET stream would stay open, idle, for ever (MCP allows 405 for both)
        Route("/mcp", JsonRpcIntake(mcp_endpoint, declared=True), methods=["POST"]),
    ]
    guard = Middleware(
        RequestGuard,
        limits=limits or HttpLimits(),
        on_reject=lambda reason: metrics.rejected.labels(reason).inc(),
        on_disconnect=lambda: metrics.rejected.labels("client_gone").inc(),
    )
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[guard],
        exception_handlers={HTTPException: http_exception, Exception: internal_error},
    )
