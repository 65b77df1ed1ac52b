"""Who is asking: a request's bearer credential resolved, once, into a typed :class:`Caller`.

:class:`Authenticator` is the one place that reads credentials. A bearer value is first compared
with the API keys (:mod:`.keys`); if none matches and it has the shape of a JWT, it is verified
against its issuer (:mod:`.tokens`) and matched to the configured callers (:mod:`.policy`). No
match is no caller: the request is refused (401) before any handler runs. Handlers receive the
:class:`Caller`, never the header.

Without ``access`` in the configuration (a laptop's agent, on loopback only) every request is
the caller ``local``, granted everything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.keys import KeyRing
from sleuth.agent.access.policy import Policy
from sleuth.agent.access.tokens import TokenRefused, TokenVerifier
from sleuth.core.api.access_config import AccessConfig

log = logging.getLogger("sleuth.agent.access")


def bearer_of(authorization: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header, else None."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or " " in value:
        return None
    return value


def looks_like_jwt(value: str) -> bool:
    return value.count(".") == 2 and value.startswith("ey")


@dataclass
class Authenticator:
    """Resolves a bearer credential into a :class:`Caller` (None: refused)."""

    config: AccessConfig | None
    keys: KeyRing = field(init=False)
    tokens: TokenVerifier = field(init=False)
    policy: Policy = field(init=False)

    def __post_init__(self) -> None:
        config = self.config or AccessConfig()
        self.keys = KeyRing(
            {c.name: Path(c.api_key_directory) for c in config.callers if c.api_key_directory}
        )
        self.tokens = TokenVerifier(config.issuers)
        self.policy = Policy(config.callers)

    @property
    def open(self) -> bool:
        """No access configured: every request is the local caller."""
        return self.config is None

    async def start(self) -> None:
        self.keys.reload()
        await self.tokens.start()

    async def tick(self) -> None:
        """Periodic work: key directories and due JWKS refreshes."""
        self.keys.reload()
        await self.tokens.refresh_due()

    async def caller(self, authorization: str | None) -> Caller | None:
        if self.config is None:
            return Caller.local()
        value = bearer_of(authorization)
        if value is None:
            return None
        key = self.keys.match(value)
        if key is not None:
            return self.policy.by_key(key)
        if not looks_like_jwt(value) or not self.tokens.issuers:
            return None
        try:
            identity = await self.tokens.verify(value)
        except TokenRefused as err:
            log.info("access: token refused (%s)", err)
            return None
        caller = self.policy.by_token(identity)
        if caller is None:
            log.info(
                "access: no caller admits token subject %s of issuer %s",
                identity.subject,
                identity.issuer,
            )
        return caller

    def problems(self) -> list[str]:
        """What keeps a configured caller or issuer from being admitted now (no secrets)."""
        found = [f"callers[{c}]: {why}" for c, why in sorted(self.keys.problems.items())]
        found += [
            f"issuers[{name}]: {keys.problem}"
            for name, keys in self.tokens.issuers.items()
            if keys.problem is not None
        ]
        return found


__all__ = ["Authenticator", "bearer_of", "looks_like_jwt"]
