"""The edge: every request's caller resolved before anything else runs (ASGI middleware).

:class:`AccessGuard` is the agent's outermost middleware. A request to a path that needs a
caller — every path but the health, metrics and agent-card routes, unknown paths included — is
resolved by the :class:`~sleuth.agent.access.identity.Authenticator` from its ``Authorization``
header before its body is read. No caller: 401, ``WWW-Authenticate: Bearer realm="sleuth-agent"``,
the same message whatever was wrong (no header, an unknown key, a forged, expired or
wrong-audience token, a caller no rule admits), the connection closed, and an audit record. A
caller: stored on the request scope (:data:`~sleuth.agent.access.caller.SCOPE_KEY`), where the
handlers' dependency :func:`~sleuth.agent.access.caller.current_caller` reads it.
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from sleuth.agent.access.caller import SCOPE_KEY
from sleuth.agent.access.identity import Authenticator
from sleuth.core.http.error_shapes import send_error

PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/.well-known/agent-card.json"})
REALM = "sleuth-agent"
CHALLENGE = f'Bearer realm="{REALM}"'
UNAUTHENTICATED = "authentication required"


def _authorization(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return None


class AccessGuard:
    """ASGI middleware: a caller for every request that needs one, else 401."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Callable[[], Authenticator],
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in PUBLIC_PATHS:
            await self.app(scope, receive, send)
            return
        caller = await self.authenticator().caller(_authorization(scope))
        if caller is None:
            if self.on_refused is not None:
                self.on_refused(scope["path"])
            await send_error(
                send,
                401,
                UNAUTHENTICATED,
                "unauthorized",
                close=True,
                headers={"WWW-Authenticate": CHALLENGE},
            )
            return
        scope[SCOPE_KEY] = caller
        await self.app(scope, receive, send)


__all__ = ["CHALLENGE", "PUBLIC_PATHS", "REALM", "AccessGuard"]
