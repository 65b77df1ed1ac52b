"""The body of a JSON-RPC route checked before the SDK behind it parses it.

The MCP endpoint of a tool service and the A2A endpoint of the agent are served by SDKs that
read the request body themselves; a body nested 100,000 levels deep made their ``json.loads``
raise ``RecursionError``, answered as an internal error (-32603, or a plain 500), and the MCP
SDK answered bytes that are not UTF-8, or a lone surrogate (``"\\ud800"``) in an argument, the
same way. :class:`JsonRpcIntake` wraps such a route: it reads the body (already in memory: the
:class:`~sleuth.core.http.request_guard.RequestGuard` in front bounds it), checks it with
:func:`~sleuth.core.http.json_body.parse_json_body`, and refuses what fails with a JSON-RPC
error response::

    HTTP 400  {"jsonrpc": "2.0", "id": null,
               "error": {"code": -32700, "message": "...", "data": {"field": null}}}

-32700 (parse error) for a body that is not UTF-8, not JSON or nested too deep; -32600 (invalid
request) with HTTP 422 and ``data.field`` naming the string for a lone surrogate, and with HTTP
415 for a body not declared JSON. A body that passes goes on to the SDK unchanged.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth.core.http.json_body import MAX_JSON_DEPTH, JsonBodyError, parse_json_body

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def jsonrpc_error_body(err: JsonBodyError) -> bytes:
    code = PARSE_ERROR if err.status == 400 else INVALID_REQUEST
    payload = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": code, "message": str(err), "data": {"field": err.field}},
    }
    return json.dumps(payload).encode()


def _media_type(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            media: str = value.decode("latin-1")
            return media.split(";")[0].strip().lower()
    return ""


class JsonRpcIntake:
    """ASGI wrapper of one JSON-RPC route: a POST body must be declared JSON and pass
    :func:`~sleuth.core.http.json_body.parse_json_body` before ``app`` sees it.

    ``declared``: the Content-Type must be ``application/json`` (the MCP SDK's own rule, which
    it answers in plain text); otherwise none, or a ``+json`` type, is accepted too, as on the
    agent's REST routes.
    Any other media type is refused with HTTP 415 and -32600."""

    def __init__(
        self, app: ASGIApp, *, declared: bool = False, max_depth: int = MAX_JSON_DEPTH
    ) -> None:
        self.app = app
        self.declared = declared
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        media = _media_type(scope)
        lenient = not self.declared and (not media or media.endswith("+json"))
        if media != "application/json" and not lenient:
            said = f"not {media[:100]}" if media else "none was given"
            err = JsonBodyError(
                f"the body must be JSON (Content-Type: application/json), {said}", status=415
            )
            await _send_json(send, 415, jsonrpc_error_body(err))
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left: nobody to answer
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            parse_json_body(body, self.max_depth)
        except JsonBodyError as err:
            await _send_json(send, err.status, jsonrpc_error_body(err))
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _send_json(send: Send, status: int, body: bytes) -> None:
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "JsonRpcIntake", "jsonrpc_error_body"]
