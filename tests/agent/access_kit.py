"""Real identities for the access tests: a JWT issuer serving its JWKS over HTTP, key directories.

:class:`LocalIssuer` holds an RSA key pair, serves ``{"keys": [...]}`` at ``/jwks`` from a thread
on a free loopback port, and signs tokens with PyJWT (the same library the agent verifies with,
but the agent only ever sees the public half, over HTTP). :meth:`LocalIssuer.forged` signs with
another key under the same key id; :meth:`LocalIssuer.rotate` replaces the signing key.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class LocalIssuer:
    def __init__(self, issuer: str = "https://issuer.test", kid: str = "k1") -> None:
        self.issuer = issuer
        self.kid = kid
        self.private = _key()
        self.fetches = 0
        self.available = True
        self._server: ThreadingHTTPServer | None = None

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    @property
    def jwks_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/jwks"

    def start(self) -> Self:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.fetches += 1
                if not issuer.available:
                    self.send_response(503)
                    self.end_headers()
                    return
                body = json.dumps(issuer.jwks()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def claims(
        self, subject: str, audience: str, expires_in: float = 600, **extra: Any
    ) -> dict[str, Any]:
        now = int(time.time())
        return {
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "nbf": now,
            "exp": now + int(expires_in),
            **extra,
        }

    def token(self, subject: str, audience: str, expires_in: float = 600, **extra: Any) -> str:
        claims = self.claims(subject, audience, expires_in, **extra)
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid})

    def forged(self, subject: str, audience: str) -> str:
        """A well-formed token under this issuer's name and key id, signed with another key."""
        claims = self.claims(subject, audience)
        return jwt.encode(claims, _key(), algorithm="RS256", headers={"kid": self.kid})

    def unsigned(self, subject: str, audience: str) -> str:
        """``alg: none``: no signature at all."""
        return jwt.encode(self.claims(subject, audience), None, algorithm="none")

    def rotate(self, kid: str) -> None:
        self.private, self.kid = _key(), kid


def new_key() -> str:
    return secrets.token_urlsafe(32)


def key_directory(root: Path, caller: str, *keys: str) -> Path:
    """A directory laid out as a mounted Secret: one file per key."""
    directory = root / caller
    directory.mkdir(parents=True, exist_ok=True)
    for index, key in enumerate(keys):
        (directory / f"key-{index}").write_text(key + "\n", encoding="utf-8")
    return directory


def audit_records(log: str) -> list[dict[str, Any]]:
    """The audit lines of an agent's output."""
    records = []
    for line in log.splitlines():
        if line.startswith('{"audit"'):
            records.append(json.loads(line))
    return records
