"""The JSON error responses of every sleuth HTTP service: the agent and the tool services.

Every error a client gets — any 4xx, and the 5xx the services answer themselves — has one shape::

    {"error": {"message": "...", "type": "...", "field": "question" | null}}

``type`` is a stable word a client can branch on (``invalid_request_error``,
``request_too_large``, ``request_timeout``, ``unsupported_media_type``, ``not_found``,
``method_not_allowed``, ``overloaded``, ``not_ready``, and a tool service's ``busy``,
``unavailable``, ``misconfigured``, ``argument``, ``error``); ``field`` names what to fix when one
field is at fault. A tool service's tool errors add ``kind`` and ``tool``
(:mod:`sleuth.tools.wire`). 429 and 503-busy carry ``Retry-After``. Messages never hold
internal addresses or file paths.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Send

_HTTP_TYPES = {
    400: "invalid_request_error",
    404: "not_found",
    405: "method_not_allowed",
    408: "request_timeout",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request_error",
}


def error_payload(
    message: str, error_type: str, field: str | None = None, **extra: Any
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "field": field, **extra}}


def error_body(
    status: int,
    message: str,
    error_type: str,
    field: str | None = None,
    *,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    return JSONResponse(
        error_payload(message, error_type, field, **extra), status_code=status, headers=headers
    )


def overloaded(message: str, retry_after_s: int) -> JSONResponse:
    """429: the service is at its concurrency limit; retry after ``retry_after_s`` seconds."""
    return error_body(429, message, "overloaded", headers={"Retry-After": str(retry_after_s)})


async def send_error(
    send: Send,
    status: int,
    message: str,
    kind: str,
    *,
    close: bool = False,
    headers: dict[str, str] | None = None,
) -> None:
    """An error response written straight to an ASGI ``send`` (for middleware, before any app
    ran); ``close`` asks the server to close the connection afterwards (the rest of an oversized
    or trickling body is never read)."""
    headers = {**(headers or {}), **({"Connection": "close"} if close else {})}
    response = error_body(status, message, kind, headers=headers)
    await send({"type": "http.response.start", "status": status, "headers": response.raw_headers})
    await send({"type": "http.response.body", "body": response.body, "more_body": False})


async def http_exception(_: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown route 404, wrong method 405, ...) in the one shape."""
    assert isinstance(exc, HTTPException)
    kind = _HTTP_TYPES.get(exc.status_code, "error" if exc.status_code >= 500 else "invalid")
    headers = dict(exc.headers) if exc.headers else None
    return error_body(exc.status_code, str(exc.detail), kind, headers=headers)


__all__ = ["error_body", "error_payload", "http_exception", "overloaded", "send_error"]
