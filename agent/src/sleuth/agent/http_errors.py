"""The JSON error responses of the agent's HTTP API, shared by its native and OpenAI routes.

Every error is ``{"error": {"message", "type", "field"}}`` with its HTTP status; 429 carries
``Retry-After``.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse

from sleuth.agent.service import Overloaded


def error_body(status: int, message: str, kind: str, field: str | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "field": field}}
    return JSONResponse(body, status_code=status)


def overloaded(exc: Overloaded) -> JSONResponse:
    """429: the agent is at ``maxConcurrentRequests``; retry after the error's delay."""
    response = error_body(429, str(exc), "overloaded")
    response.headers["Retry-After"] = str(exc.retry_after_s)
    return response
