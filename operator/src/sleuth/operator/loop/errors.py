"""Errors of the control loop's own, under :class:`sleuth.core.errors.SleuthError` (the loop
imports nothing of the domain, :mod:`sleuth.operator.errors` included, which re-exports them)::

    ChildConflict    permanent: an object with a child's name exists and is not the owner's;
                     it is left alone
"""

from __future__ import annotations

from sleuth.core.errors import SleuthError


class ChildConflict(SleuthError):
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


__all__ = ["ChildConflict"]
