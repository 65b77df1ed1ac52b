"""The typed caller every handler receives (:class:`Caller`), and where it is kept on a request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from starlette.requests import Request
from starlette.types import Scope

Proof = Literal["api_key", "token", "local"]
LOCAL = "local"
SCOPE_KEY = "sleuth.caller"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated caller: its configured name, how it proved it, what it may see."""

    name: str
    proof: Proof
    subject: str  # the key's id (file name) or the token's `sub`: never a secret
    trace: bool = False
    evaluation: bool = False
    approve: bool = False  # decides the calls its own runs wait to have approved

    @classmethod
    def local(cls) -> Caller:
        return cls(LOCAL, "local", LOCAL, trace=True, evaluation=True, approve=True)


def caller_of_scope(scope: Scope) -> Caller:
    """The caller the access middleware resolved for this request (a missing one is a bug in
    the app's assembly: no request reaches a handler without one)."""
    caller = scope.get(SCOPE_KEY)
    if not isinstance(caller, Caller):
        raise RuntimeError("no caller on the request: the access middleware is not installed")
    return caller


def current_caller(request: Request) -> Caller:
    """FastAPI dependency: the request's :class:`Caller`."""
    return caller_of_scope(request.scope)


__all__ = ["LOCAL", "SCOPE_KEY", "Caller", "Proof", "caller_of_scope", "current_caller"]
