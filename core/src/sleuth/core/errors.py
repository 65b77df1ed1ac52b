"""The one error root of every sleuth package, and the errors more than one package raises.

Each package keeps its own subtree under :class:`SleuthError` (drawn in its ``errors`` module);
whether trying again may help is said one way everywhere: the ``retryable`` attribute.

::

    SleuthError                     root; ``retryable`` False unless a subclass says otherwise
    ├── ConfigError (ValueError)    a setting or configuration cannot be used (names it)
    ├── DatasetError                a dataset file is invalid (names file, line and field)
    ├── ModelError                  a call to the model server failed
    │   ├── ModelUnavailable        retryable: connection refused, timeout, 429 or 5xx
    │   │   └── ModelTimeout        no answer within the client's timeout
    │   └── ModelResponseError      permanent: 4xx or a body that is not the OpenAI format
    │       └── GuidedReplyError    a guided reply that is not the schema's JSON (core.guided)
    ├── KubeError                   a Kubernetes API call failed (sleuth.core.kube)
    │   ├── KubeRetryable           retryable: unreachable, throttled, 5xx, timeout
    │   │   ├── KubeConflict        another writer won a race (409 on a non-apply write)
    │   │   └── KubeExhausted       a capacity is used up (a full Service IP range): reported too
    │   └── KubeRejected            permanent: the request is refused as sent (invalid, forbidden,
    │                               too large, unconvertible; sleuth.core.kubestatus.classify)
    ├── NotHealthy (RuntimeError)   a local child process never answered (sleuth.core.process)
    ├── SqlRejected                 the SQL guard refused a query (sleuth.core.sql.guard)
    ├── AgentError                  sleuth.agent.errors
    ├── ToolError                   sleuth.tools.base
    ├── OperatorError               sleuth.operator.errors
    ├── JudgeError                  sleuth.scoring.errors
    └── EvalError                   sleuth.evals.errors
"""

from __future__ import annotations

from dataclasses import dataclass


class SleuthError(Exception):
    """Root of every error a sleuth package raises on purpose."""

    retryable: bool = False


class ConfigError(SleuthError, ValueError):
    """A setting or configuration value cannot be used; the message names it."""


class DatasetError(SleuthError):
    """A dataset record is invalid; ``path``, ``line`` and ``field`` say where."""

    def __init__(self, message: str, *, path: str = "", line: int = 0, field: str = "") -> None:
        where = path or "<data>"
        if line:
            where += f":{line}"
        if field:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.field = field


class ModelError(SleuthError):
    """A call to the model server failed."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ModelUnavailable(ModelError):
    """The model server is down, overloaded or too slow; trying again later may work."""

    retryable = True


class ModelTimeout(ModelUnavailable):
    """The model server did not answer within the client's timeout."""


class ModelResponseError(ModelError):
    """The model server rejected the request or answered something unparseable."""


@dataclass(frozen=True)
class KubeCause:
    """One cause of a refused request (``metav1.StatusCause``): its type, field and message."""

    reason: str = ""
    field: str = ""
    message: str = ""

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class KubeError(SleuthError):
    """A Kubernetes API call failed; ``reason`` and ``causes`` are the Status body's, if any."""

    def __init__(
        self, message: str, *, reason: str = "", causes: tuple[KubeCause, ...] = ()
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.causes = causes


class KubeRetryable(KubeError):
    """A transient failure: the same call may succeed later."""

    retryable = True


class KubeConflict(KubeRetryable):
    """Another writer changed the object first (HTTP 409)."""


class KubeExhausted(KubeRetryable):
    """The cluster lacks a capacity now (the Service IP range is full): retrying may succeed once
    something is freed, and the owner should say so meanwhile."""


class KubeRejected(KubeError):
    """The apiserver refused a request for good; its status code and message are kept
    (``detail``: the apiserver's message, without the request)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        reason: str = "",
        causes: tuple[KubeCause, ...] = (),
        detail: str | None = None,
    ) -> None:
        super().__init__(f"HTTP {status}: {message}", reason=reason, causes=causes)
        self.status = status
        self.detail = message if detail is None else detail
