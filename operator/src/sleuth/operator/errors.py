"""Errors of the operator, under :class:`sleuth.core.errors.SleuthError`.

Failures of Kubernetes API calls are :class:`sleuth.core.errors.KubeError` (``retryable`` says
whether to try again); what the operator itself decides is here::

    OperatorError                base of what the operator raises itself
    ├── PermanentError           retrying the same input cannot help
    │   ├── InvalidSpec          the custom resource's spec is invalid (names the field)
    │   └── ChildConflict        an object with a child's name exists and is not the owner's:
    │                            it is left alone
    └── FirstRolloutHeld         retryable: an agent's first rollout waits a moment for the
                                 ToolBindings applied with it (its status says so)
"""

from __future__ import annotations

from sleuth.core.errors import SleuthError


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


class ChildConflict(PermanentError):
    """An object with the name a child needs exists and is not controlled by the child's owner
    (no ownerReference with ``controller: true`` and the owner's uid): it is not changed."""

    def __init__(self, kind: str, namespace: str, name: str, controller: str) -> None:
        self.detail = (
            f"exists in {namespace} and is not controlled by this resource ({controller}): it is "
            "left alone; delete or rename it, or rename this resource"
        )
        super().__init__(f"{kind} {namespace}/{name} {self.detail}")
        self.kind = kind
        self.name = name


class FirstRolloutHeld(OperatorError):
    """A new agent's Deployment is held back for a moment (see
    :mod:`sleuth.operator.reconcile_agent`); the status is written: come back shortly."""

    retryable = True


__all__ = ["ChildConflict", "FirstRolloutHeld", "InvalidSpec", "OperatorError", "PermanentError"]
