"""Errors of the operator, split by what the caller should do about them.

::

    OperatorError                base; never escapes a handler unclassified
    ├── RetryableError           try again later: the apiserver is unreachable, throttling, 5xx,
    │   └── ConflictError        or another writer won a race (409 on a non-apply write)
    └── PermanentError           retrying the same input cannot help
        ├── InvalidSpec          the custom resource's spec is invalid (names the field)
        └── RejectedError        the apiserver refused a request (4xx but 404/409)
"""

from __future__ import annotations


class OperatorError(Exception):
    """Base of every operator error."""


class RetryableError(OperatorError):
    """A transient failure: the same call may succeed later."""


class ConflictError(RetryableError):
    """Another writer changed the object first (HTTP 409)."""


class PermanentError(OperatorError):
    """Retrying with the same input will fail the same way."""


class InvalidSpec(PermanentError):
    """The spec does not validate; ``field`` is its camelCase path, e.g. ``spec.model.gpu``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message if message.startswith(field) else f"{field}: {message}")
        self.field = field
        self.detail = message


class RejectedError(PermanentError):
    """The apiserver refused a request (status and its message kept)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


__all__ = [
    "ConflictError",
    "InvalidSpec",
    "OperatorError",
    "PermanentError",
    "RejectedError",
    "RetryableError",
]
