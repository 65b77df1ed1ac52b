"""How an answer of the Kubernetes API server that is not a success becomes an error.

The one policy of :class:`sleuth.core.kube.Kube` for its errors: :func:`classify` reads what the
apiserver's Status body says (``reason``, ``details.causes``), not the HTTP code alone.

- 404: reads return ``None``, deletes succeed (the object is already gone), other writes return
  ``None`` (the object, or its namespace, is gone).
- :class:`KubeConflict` (retryable): ``Conflict`` / ``AlreadyExists`` (409). Server-side apply uses
  ``force``, so it does not conflict with other field managers; only plain writes can: a create of
  an existing name, or a write carrying a ``resourceVersion`` that is no longer current.
- :class:`KubeRetryable`: throttling (429), timeouts, an unavailable or overloaded server, an
  internal error, a connection error, and a namespace that is being deleted (403 with the cause
  ``NamespaceTerminating``: the object's owner goes with it).
- :class:`KubeExhausted` (retryable): a Service refused because the Service IP range is full
  (500 ``InternalError``, "failed to allocate a serviceIP: range is full"). An IP comes free
  when any Service is deleted, so it is retried; unlike a passing fault it is also reported on
  the owner, since it lasts until someone acts.
- :class:`KubeRejected` (permanent): the request itself is refused, and sending it again cannot
  help: ``Invalid`` (422), ``Forbidden`` (403: RBAC or an admission policy), ``BadRequest``,
  ``RequestEntityTooLarge`` (413), and an ``InternalError`` (500) whose message says the request
  could not be converted (server-side apply answers 500 for an object it cannot type, e.g. a
  quantity ``banana``). It keeps the Status ``reason`` and the causes' field paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sleuth.core.errors import (
    KubeCause,
    KubeConflict,
    KubeError,
    KubeExhausted,
    KubeRejected,
    KubeRetryable,
)


@dataclass(frozen=True)
class ApiStatus:
    """The parts of a ``metav1.Status`` failure that say what went wrong."""

    code: int
    reason: str
    message: str
    causes: tuple[KubeCause, ...]

    @classmethod
    def parse(cls, code: int, text: str) -> ApiStatus:
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return cls(code, "", text[:500], ())
        details = body.get("details")
        raw = details.get("causes") if isinstance(details, dict) else None
        causes = tuple(
            KubeCause(str(c.get("reason", "")), str(c.get("field", "")), str(c.get("message", "")))
            for c in raw or []
            if isinstance(c, dict)
        )
        message = str(body.get("message") or text[:500])
        return cls(code, str(body.get("reason") or ""), message, causes)

    def mentions(self, text: str) -> bool:
        """Whether the message or a cause (its type or message) holds ``text``."""
        return text in self.message or any(
            text in cause.reason or text in cause.message for cause in self.causes
        )


# A 500 holding one of these says the request itself cannot be typed or decoded: not transient.
UNCONVERTIBLE = (
    "failed to create typed patch object",
    "unable to convert unstructured object",
    "unable to decode",
    "cannot unmarshal",
)
NAMESPACE_TERMINATING = "NamespaceTerminating"
# The Service IP range is full: an IP comes free when any Service is deleted.
IP_RANGE_FULL = ("range is full", "no more addresses")


def classify(code: int, text: str, request: str) -> KubeError:
    """The error of a failed call (``request``: method and path), from the apiserver's answer:
    see the module docstring for the policy."""
    status = ApiStatus.parse(code, text)
    reason, causes = status.reason, status.causes
    message = f"{request}: {status.message}"
    if code == 409 or reason in ("Conflict", "AlreadyExists"):
        return KubeConflict(message, reason=reason, causes=causes)
    if reason == "Forbidden" and status.mentions(NAMESPACE_TERMINATING):
        return KubeRetryable(message, reason=reason, causes=causes)
    if any(status.mentions(text) for text in IP_RANGE_FULL):
        return KubeExhausted(message, reason=reason, causes=causes)
    if code >= 500 and any(text in status.message for text in UNCONVERTIBLE):
        return KubeRejected(code, message, reason=reason, causes=causes, detail=status.message)
    if code == 429 or code >= 500:
        message = f"{request}: HTTP {code}: {status.message}"
        return KubeRetryable(message, reason=reason, causes=causes)
    return KubeRejected(code, message, reason=reason, causes=causes, detail=status.message)


__all__ = ["IP_RANGE_FULL", "NAMESPACE_TERMINATING", "UNCONVERTIBLE", "ApiStatus", "classify"]
