"""A request's life on a sleuth HTTP service: its body read within limits, its work cancelled
when the client goes away.

:class:`RequestGuard` is ASGI middleware for the agent and the tool services:

1. **Size.** A ``Content-Length`` above ``max_body_bytes`` is refused with 413 before a byte of
   the body is read; without one (chunked), the bytes of ``http.request`` messages are counted as
   they arrive and the request is refused as soon as the count passes the limit. Nothing beyond
   the limit is ever held in memory, and the app never buffers an oversized body.
2. **Time.** The whole body must arrive within ``body_read_timeout_s``, else 408. (The headers'
   own deadline is the HTTP server's: :mod:`sleuth.core.http.server`.)
3. **Shedding.** ``shed(scope)`` may refuse a request at once (the agent at
   ``maxConcurrentRequests``): 429 with ``Retry-After``, before its body is read or parsed, the
   cheapest answer the service can give.
4. **Disconnects.** Once the body is read the app runs as a task, and the guard watches the
   connection: a client that goes away before its response is complete cancels that task, so
   the agent's loop, a tool call, a SQL statement stop — and release what they held (an
   admission slot, a database connection) — instead of running for nobody.

Refusals are counted through ``on_reject(reason)`` (``too_large``, ``slow_body``) and
disconnects through ``on_disconnect()``; both answer in the shape of
:mod:`sleuth.core.http.error_shapes` with ``Connection: close``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth.core.http.error_shapes import send_error


class LimitSettings(Protocol):
    """What :meth:`HttpLimits.of` reads: the agent's ``limits`` or a ToolBinding's."""

    @property
    def max_body_bytes(self) -> int: ...
    @property
    def max_header_bytes(self) -> int: ...
    @property
    def header_read_timeout_seconds(self) -> int: ...
    @property
    def body_read_timeout_seconds(self) -> int: ...
    @property
    def keep_alive_timeout_seconds(self) -> int: ...


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Limits of one HTTP server (defaults: those of ``HttpLimitsSpec``)."""

    max_body_bytes: int = 1048576
    max_header_bytes: int = 16384
    header_read_timeout_s: float = 10.0
    body_read_timeout_s: float = 30.0
    keep_alive_timeout_s: float = 5.0

    @classmethod
    def of(cls, settings: LimitSettings | None) -> HttpLimits:
        if settings is None:
            return cls()
        return cls(
            max_body_bytes=settings.max_body_bytes,
            max_header_bytes=settings.max_header_bytes,
            header_read_timeout_s=settings.header_read_timeout_seconds,
            body_read_timeout_s=settings.body_read_timeout_seconds,
            keep_alive_timeout_s=settings.keep_alive_timeout_seconds,
        )


class _TooLarge(Exception):
    pass


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class RequestGuard:
    """ASGI middleware: the body read within limits, the app cancelled on disconnect."""

    def __init__(
        self,
        app: ASGIApp,
        limits: HttpLimits,
        on_reject: Callable[[str], None] | None = None,
        on_disconnect: Callable[[], None] | None = None,
        shed: Callable[[Scope], str | None] | None = None,
    ) -> None:
        self.app = app
        self.limits = limits
        self.on_reject = on_reject or (lambda _: None)
        self.on_disconnect = on_disconnect or (lambda: None)
        self.shed = shed or (lambda _: None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.shed(scope)
        if refusal is not None:  # at capacity: 429 before the body is read or parsed
            await send_error(send, 429, refusal, "overloaded", headers={"Retry-After": "1"})
            return
        limit = self.limits.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(send, 413, "too_large", self._too_large(declared))
            return
        try:
            async with asyncio.timeout(self.limits.body_read_timeout_s):
                body = await self._read_body(receive, limit)
        except _TooLarge:
            await self._refuse(send, 413, "too_large", self._too_large(None))
            return
        except TimeoutError:
            message = (
                f"the request body did not arrive within {self.limits.body_read_timeout_s:g} s "
                "(limits.bodyReadTimeoutSeconds)"
            )
            await self._refuse(send, 408, "slow_body", message)
            return
        if body is None:  # the client left while sending
            self.on_disconnect()
            return
        await self._run(scope, receive, send, body)

    def _too_large(self, declared: int | None) -> str:
        size = f"{declared} bytes" if declared is not None else "the request body"
        return (
            f"{size} is over the limit of {self.limits.max_body_bytes} bytes (limits.maxBodyBytes)"
        )

    async def _refuse(self, send: Send, status: int, reason: str, message: str) -> None:
        self.on_reject(reason)
        kind = "request_too_large" if status == 413 else "request_timeout"
        await send_error(send, status, message, kind, close=True)

    @staticmethod
    async def _read_body(receive: Receive, limit: int) -> bytes | None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def _run(self, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
        gone = asyncio.Event()
        delivered = False
        complete = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def tracked_send(message: Message) -> None:
            nonlocal complete
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        app = asyncio.ensure_future(self.app(scope, replay, tracked_send))
        # The server's receive() returns http.disconnect once the client is gone (or once the
        # response is complete): the only message left after the body.
        watcher: asyncio.Future[Any] = asyncio.ensure_future(receive())
        try:
            await asyncio.wait({app, watcher}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            app.cancel()
            watcher.cancel()
            raise
        if not app.done():
            gone.set()
            if not complete:
                self.on_disconnect()
                app.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await app
            return
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        app.result()


__all__ = ["HttpLimits", "LimitSettings", "RequestGuard"]
