"""The HTTP server of the agent and the tool services: uvicorn, with deadlines on slow clients.

uvicorn times out idle keep-alive connections but not a client that trickles its request line
and headers (a connection that sends one byte every few seconds holds its socket for ever).
:func:`guarded_protocol` subclasses uvicorn's httptools protocol: from the moment a connection
opens — and from the first byte of every further request on it — the request line and headers
must be complete within ``header_read_timeout_s``, and may not exceed ``max_header_bytes``;
otherwise the client gets 408 (or 431) and the connection is closed. The body's deadline and size
are :class:`sleuth.core.http.request_guard.RequestGuard`'s.

:func:`serve` runs an ASGI app with these limits (uvloop, httptools, no access log).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from sleuth.core.http.error_shapes import error_payload
from sleuth.core.http.request_guard import HttpLimits

log = logging.getLogger("sleuth.http")


def _raw_error(status: int, reason: str, message: str, kind: str) -> bytes:
    body = json.dumps(error_payload(message, kind)).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


def guarded_protocol(limits: HttpLimits) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with a header deadline and a header size limit."""

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        _header_timer: asyncio.TimerHandle | None = None
        _header_bytes = 0
        _reading_headers = False
        _headers_too_large = False
        _parsed_bytes = 0

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(
                    limits.header_read_timeout_s, self._headers_timed_out
                )
            self._reading_headers = True
            self._header_bytes = 0

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            self._reading_headers = False

        def _headers_timed_out(self) -> None:
            self._header_timer = None
            if not self._reading_headers or self.transport.is_closing():
                return
            log.info(
                "closing a connection whose headers took over %gs", limits.header_read_timeout_s
            )
            message = (
                f"the request headers did not arrive within {limits.header_read_timeout_s:g} s "
                "(limits.headerReadTimeoutSeconds)"
            )
            self.transport.write(_raw_error(408, "Request Timeout", message, "request_timeout"))
            self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._parsed_bytes = 0
            if not self._reading_headers:
                self._arm()

        def _count(self, size: int) -> None:
            self._parsed_bytes += size
            if self._parsed_bytes > limits.max_header_bytes:
                self._headers_too_large = True
                raise ValueError("headers over the limit")  # stops the parser: a 431 follows

        def on_url(self, url: bytes) -> None:
            self._count(len(url))
            super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._count(len(name) + len(value) + 4)
            super().on_header(name, value)

        def send_400_response(self, msg: str) -> None:
            if not self._headers_too_large:
                super().send_400_response(msg)
                return
            self._refuse_large_headers()

        def _refuse_large_headers(self) -> None:
            self._disarm()
            message = (
                f"the request line and headers are over {limits.max_header_bytes} bytes "
                "(limits.maxHeaderBytes)"
            )
            self.transport.write(
                _raw_error(431, "Request Header Fields Too Large", message, "request_too_large")
            )
            self.transport.close()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def data_received(self, data: bytes) -> None:
            if self._reading_headers:
                self._header_bytes += len(data)
            super().data_received(data)
            # A header still incomplete after this chunk is held by the parser: count raw bytes
            # too, so one endless header cannot grow without bound.
            if (
                self._reading_headers
                and self._header_bytes > limits.max_header_bytes
                and not self.transport.is_closing()
            ):
                self._refuse_large_headers()

    return GuardedHttpToolsProtocol


def server_config(
    app: Any, host: str, port: int, limits: HttpLimits, **extra: Any
) -> uvicorn.Config:
    """A uvicorn configuration serving ``app`` with ``limits``."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(limits),
        loop="uvloop",
        timeout_keep_alive=max(1, round(limits.keep_alive_timeout_s)),
        access_log=False,
        **extra,
    )


def serve(app: Any, host: str, port: int, limits: HttpLimits, log_level: str = "info") -> None:
    """Serve ``app`` until SIGTERM/SIGINT."""
    uvicorn.Server(server_config(app, host, port, limits, log_level=log_level)).run()


__all__ = ["guarded_protocol", "serve", "server_config"]
