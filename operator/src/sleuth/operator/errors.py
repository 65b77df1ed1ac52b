"""Errors of the operator, under :class:`sleuth.core.errors.SleuthError`.

Failures of Kubernetes API calls are :class:`sleuth.core.errors.KubeError` (``retryable`` says
whether to try again); what the operator itself decides is here::

    OperatorError                base of what the operator raises itself
    ├── PermanentError           retrying the same input cannot help
    │   ├── InvalidSpec          the custom resource's spec is invalid (names the field)
    └── FirstRolloutHeld         retryable: an agent's first rollout waits a moment for the
                                 ToolBindings applied with it (its status says so)
"""

from __future__ import annotations

from sleuth.core.errors import SleuthError
from sleuth.operator.loop.errors import ChildConflict


class OperatorError(SleuthError):
    """Base of the operator's own errors."""


class PermanentError(OperatorError):
    """Retrying with the same input will fail the same way."""


class InvalidSpec(PermanentError):
    """The spec does not validate; ``field`` is its camelCase path, e.g. ``spec.model.gpu``."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message if message.startswith(field) else f"{field}: {message}")
        self.field = field
        self.detail = message


class FirstRolloutHeld(OperatorError):
    """A new agent's Deployment is held back for a moment (see
    :mod:`sleuth.operator.reconcile_agent`); the status is written: come back shortly."""

    retryable = True


__all__ = ["ChildConflict", "FirstRolloutHeld", "InvalidSpec", "OperatorError", "PermanentError"]
