"""Writing a run's part to an EvalSchedule's status subresource (the maths: :mod:`.status`).

A read-modify-write through :mod:`sleuth.core.kube`: a JSON merge patch carrying the
``resourceVersion`` that was read, so a concurrent writer (another shard, the operator) makes it
fail with 409 (:class:`~sleuth.core.errors.KubeConflict`) and it is redone on the fresh object —
no lost update. Retryable errors (429, 5xx, transport) are retried with backoff until a deadline;
a refusal (403, 422, ...) and a missing EvalSchedule (404) fail at once with a
:class:`StatusError` naming the EvalSchedule. Needs ``get`` and ``patch`` on
``evalschedules/status``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sleuth.core.api.v1alpha1.evalschedule import EvalPart
from sleuth.core.errors import ConfigError, KubeConflict, KubeRejected, KubeRetryable
from sleuth.core.kube import EVAL_SCHEDULE, Kube, new_api_client
from sleuth.evals.status import (
    RunContext,
    StatusError,
    StatusTarget,
    merge_patch,
    next_status,
)

_HINTS = {
    403: " (the pod's ServiceAccount needs get and patch on evalschedules/status)",
    404: " (does the EvalSchedule exist, and is its CRD installed?)",
}


def api_client(kubeconfig: str | None) -> Any:
    """An ApiClient with the credentials of :func:`sleuth.core.kube.new_api_client`: --kubeconfig,
    else in-cluster, else $KUBECONFIG or ~/.kube/config; :class:`StatusError` when none works."""
    try:
        return new_api_client(kubeconfig)
    except ConfigError as exc:
        raise StatusError(str(exc)) from None


@dataclass(frozen=True)
class RetryPolicy:
    """409 is redone at once (with jitter); retryable errors back off until ``deadline_s``;
    anything else fails at once."""

    conflicts: int = 30
    deadline_s: float = 60.0
    request_timeout_s: float = 15.0


class StatusWriter:
    """Reads and patches one EvalSchedule's status subresource."""

    def __init__(self, client: Any, target: StatusTarget, policy: RetryPolicy | None = None):
        self.target = target
        self.policy = policy or RetryPolicy()
        self._kube = Kube(client, timeout=self.policy.request_timeout_s)

    def _call(self, what: str, request: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
        """``request`` with retries of retryable errors; a conflict goes to the caller."""
        started, delay = time.monotonic(), 0.5
        while True:
            try:
                found = request()
            except KubeConflict:
                raise
            except KubeRetryable as exc:
                problem = str(exc)
            except KubeRejected as exc:
                hint = _HINTS.get(exc.status, "")
                raise StatusError(
                    f"{what} EvalSchedule {self.target}: HTTP {exc.status}: {exc.detail}{hint}"
                ) from None
            else:
                if found is None:
                    raise StatusError(
                        f"{what} EvalSchedule {self.target}: HTTP 404 (not found){_HINTS[404]}"
                    )
                return found
            if time.monotonic() - started + delay > self.policy.deadline_s:
                raise StatusError(
                    f"{what} EvalSchedule {self.target}: gave up after "
                    f"{self.policy.deadline_s:g} s: {problem}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 8.0)

    def read(self) -> dict[str, Any]:
        t = self.target
        return self._call(
            "cannot read", lambda: self._kube.get(EVAL_SCHEDULE, t.namespace, t.name, "status")
        )

    def write_part(self, part: EvalPart, run: RunContext) -> dict[str, Any]:
        """Report ``part``; the status as written (retried on 409 from a fresh read)."""
        t = self.target
        for _ in range(self.policy.conflicts):
            obj = self.read()
            old = obj.get("status") or {}
            new = next_status(old, part, run)
            write = partial(
                self._kube.patch_status,
                EVAL_SCHEDULE,
                t.namespace,
                t.name,
                merge_patch(old, new),
                resource_version=obj["metadata"]["resourceVersion"],
            )
            try:
                self._call("cannot write the status of", write)
            except KubeConflict:  # someone wrote in between: redo on the fresh object
                time.sleep(random.uniform(0.0, 0.2))
                continue
            return new
        raise StatusError(
            f"cannot write the status of EvalSchedule {t}: still conflicting after "
            f"{self.policy.conflicts} attempts"
        )


__all__ = ["RetryPolicy", "StatusWriter", "api_client"]
