"""JWT bearer tokens checked against their issuer's JWKS (PyJWT).

Each configured issuer (:class:`~sleuth.core.api.access_config.IssuerConfig`) has an
:class:`IssuerKeys`: its JWKS, read at start, again every ``refreshSeconds``, and at most once
every :data:`UNKNOWN_KID_REFRESH_S` when a token names a key id it does not have (the issuer
rotated its keys). A token is accepted only when all of these hold: its header names an
asymmetric algorithm (``none`` and HMAC never: a public key is no secret) and a key of its
issuer's set; the signature verifies; ``iss`` is the issuer; ``aud`` names one of the
``audiences``; ``exp`` is in the future and ``nbf``/``iat`` not (``leewaySeconds`` of skew); and
``sub`` is present.

A verified token is remembered (by its SHA-256, at most :data:`CACHE_SIZE` of them) for up to
:data:`CACHE_S` seconds, never past its ``exp``, never while its issuer's keys are unusable and
never across a change of its issuer's key set (a key removed from the JWKS stops its tokens):
a caller that sends the same token again (the eval Job, another agent: a projected token lives an
hour) is not verified again for each request, which costs an RSA check (~0.15 ms) otherwise.

Fail closed: until a JWKS has been read, and once the last good one is older than
:func:`stale_after` (the JWKS server unreachable for a while), the issuer's tokens are refused
and the reason is logged. The token, its claims and the JWKS reader's own token are never logged.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt

from sleuth.core.api.access_config import IssuerConfig

log = logging.getLogger("sleuth.agent.access")

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
UNKNOWN_KID_REFRESH_S = 5.0
FETCH_TIMEOUT_S = 10.0
MAX_JWKS_BYTES = 1 << 20
CACHE_SIZE = 1024
CACHE_S = 60.0


@dataclass(frozen=True, slots=True)
class TokenIdentity:
    """What a verified token says: its issuer, subject and claims."""

    issuer: str
    subject: str
    claims: Mapping[str, Any]
    service_accounts: bool  # the issuer's tokens name ServiceAccounts


class TokenRefused(Exception):
    """Why a token was refused (for the log: a category, never the token)."""


def stale_after(config: IssuerConfig) -> float:
    """Seconds a JWKS stays usable when it cannot be read again."""
    return max(3.0 * config.refresh_seconds, 900.0)


@dataclass
class IssuerKeys:
    """The signing keys of one issuer, kept fresh."""

    config: IssuerConfig
    keys: dict[str, Any] = field(default_factory=dict)  # kid -> public key
    unnamed: list[Any] = field(default_factory=list)  # keys without a kid
    fetched_at: float | None = None
    last_attempt: float = 0.0
    problem: str | None = "the JWKS has not been read yet"
    generation: int = 0  # moves whenever the set of keys changes
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def _client(self) -> httpx.AsyncClient:
        verify: ssl.SSLContext | bool = True
        if self.config.ca_file:
            verify = ssl.create_default_context(cafile=self.config.ca_file)
        return httpx.AsyncClient(timeout=FETCH_TIMEOUT_S, verify=verify, trust_env=False)

    async def refresh(self) -> bool:
        """Read the JWKS; True when it was read and holds a usable key."""
        async with self._lock:
            self.last_attempt = time.monotonic()
            try:
                # kube-apiserver serves its JWKS only as application/jwk-set+json (406 for JSON)
                headers = {"Accept": "application/jwk-set+json, application/json"}
                if self.config.token_file:
                    bearer = await asyncio.to_thread(_read_token, self.config.token_file)
                    headers["Authorization"] = f"Bearer {bearer}"
                async with self._client() as client:
                    resp = await client.get(str(self.config.jwks_url), headers=headers)
                if resp.status_code != 200:
                    raise ValueError(f"HTTP {resp.status_code}")
                if len(resp.content) > MAX_JWKS_BYTES:
                    raise ValueError(f"over {MAX_JWKS_BYTES} bytes")
                keyset = jwt.PyJWKSet.from_dict(resp.json())
            except (OSError, httpx.HTTPError, ValueError, jwt.PyJWKSetError) as err:
                self._failed(f"{type(err).__name__}: {_safe(err)}")
                return False
            keys: dict[str, Any] = {}
            unnamed: list[Any] = []
            for jwk in keyset.keys:
                if jwk.key_type not in ("RSA", "EC"):
                    continue
                if jwk.key_id:
                    keys[jwk.key_id] = jwk.key
                else:
                    unnamed.append(jwk.key)
            if not keys and not unnamed:
                self._failed("the JWKS holds no RSA or EC key")
                return False
            if self.problem is not None:
                log.info("access: issuer %s: JWKS read (%d keys)", self.config.issuer, len(keys))
            if set(keys) != set(self.keys) or len(unnamed) != len(self.unnamed):
                self.generation += 1
            self.keys, self.unnamed = keys, unnamed
            self.fetched_at = time.monotonic()
            self.problem = None
            return True

    def _failed(self, why: str) -> None:
        message = f"reading the JWKS at {self.config.jwks_url} failed ({why})"
        if self.fetched_at is not None and time.monotonic() - self.fetched_at <= stale_after(
            self.config
        ):
            log.warning("access: issuer %s: %s; keeping the last keys", self.config.issuer, message)
            return
        if self.problem != message:
            log.error("access: issuer %s: %s; its tokens are refused", self.config.issuer, message)
        self.keys, self.unnamed, self.fetched_at = {}, [], None
        self.generation += 1
        self.problem = message

    def usable(self) -> bool:
        if self.fetched_at is None:
            return False
        if time.monotonic() - self.fetched_at > stale_after(self.config):
            if self.problem is None:
                self.problem = "the JWKS could not be read again in time"
                log.error("access: issuer %s: %s", self.config.issuer, self.problem)
            return False
        return True

    async def key_for(self, kid: str | None) -> list[Any]:
        """The keys a token with ``kid`` may be signed with (refreshing once for a new kid)."""
        if kid is not None and kid in self.keys and self.usable():
            return [self.keys[kid]]
        if time.monotonic() - self.last_attempt >= UNKNOWN_KID_REFRESH_S:
            await self.refresh()
        if not self.usable():
            raise TokenRefused(self.problem or "no JWKS")
        if kid is not None:
            if kid in self.keys:
                return [self.keys[kid]]
            raise TokenRefused("unknown key id")
        return list(self.keys.values()) + self.unnamed


class TokenVerifier:
    """Verifies bearer JWTs of the configured issuers."""

    def __init__(self, issuers: list[IssuerConfig]) -> None:
        self.issuers = {i.issuer: IssuerKeys(i) for i in issuers}
        # sha256(token) -> (identity, monotonic time it stops being trusted, key-set generation)
        self._verified: OrderedDict[bytes, tuple[TokenIdentity, float, int]] = OrderedDict()

    async def start(self) -> None:
        await asyncio.gather(*(keys.refresh() for keys in self.issuers.values()))

    async def refresh_due(self) -> None:
        """Refresh each issuer whose period has passed (called by the access module's timer)."""
        now = time.monotonic()
        due = [
            k
            for k in self.issuers.values()
            if now - k.last_attempt >= (k.config.refresh_seconds if k.problem is None else 10.0)
        ]
        await asyncio.gather(*(k.refresh() for k in due))

    async def verify(self, token: str) -> TokenIdentity:
        """The token's identity, or :class:`TokenRefused`."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        now = time.monotonic()
        hit = self._verified.get(digest)
        if hit is not None:
            identity, until, generation = hit
            keys = self.issuers[identity.issuer]
            if until > now and keys.generation == generation and keys.usable():
                self._verified.move_to_end(digest)
                return identity
            del self._verified[digest]
        identity = await self._verify(token)
        lifetime = float(identity.claims["exp"]) - time.time()
        if lifetime > 0:
            generation = self.issuers[identity.issuer].generation
            self._verified[digest] = (identity, now + min(CACHE_S, lifetime), generation)
            while len(self._verified) > CACHE_SIZE:
                self._verified.popitem(last=False)
        return identity

    async def _verify(self, token: str) -> TokenIdentity:
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError as err:
            raise TokenRefused("malformed") from err
        issuer = unverified.get("iss")
        keys = self.issuers.get(issuer) if isinstance(issuer, str) else None
        if keys is None:
            raise TokenRefused("unknown issuer")
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise TokenRefused("algorithm not accepted")
        kid = header.get("kid")
        candidates = await keys.key_for(kid if isinstance(kid, str) else None)
        config = keys.config
        last: Exception | None = None
        for key in candidates:
            try:
                claims = jwt.decode(
                    token,
                    key,
                    algorithms=[alg],
                    audience=list(config.audiences),
                    issuer=config.issuer,
                    leeway=config.leeway_seconds,
                    options={"require": ["exp", "iss", "aud", "sub"]},
                )
            except jwt.InvalidSignatureError as err:
                last = err
                continue
            except jwt.InvalidTokenError as err:
                raise TokenRefused(type(err).__name__) from err
            return TokenIdentity(config.issuer, str(claims["sub"]), claims, config.service_accounts)
        raise TokenRefused(type(last).__name__ if last else "no key")


def _read_token(path: str) -> str:
    return Path(path).read_text(encoding="utf-8").strip()


def _safe(err: BaseException) -> str:
    """An error's text, short (a JWKS error page is not logged whole)."""
    return str(err).splitlines()[0][:200] if str(err) else ""


__all__ = ["ALGORITHMS", "IssuerKeys", "TokenIdentity", "TokenRefused", "TokenVerifier"]
