"""Writing a run's part to an EvalSchedule's status subresource (the maths: :mod:`.status`).

A read-modify-write: a JSON merge patch carrying the ``resourceVersion`` that was read, so a
concurrent writer (another shard, the operator) makes it fail with 409 and it is redone on the
fresh object — no lost update. 429, 5xx and transport errors are retried with backoff until a
deadline; anything else (403, 404, 422) fails at once with a :class:`StatusError` naming the
EvalSchedule. Needs ``get`` and ``patch`` on ``evalschedules/status``.
"""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client as k8s
from kubernetes import config

from sleuth.core.api.v1alpha1.evalschedule import EvalPart
from sleuth.evals.status import (
    GROUP,
    PLURAL,
    VERSION,
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
    """An ApiClient: --kubeconfig, else in-cluster, else $KUBECONFIG or ~/.kube/config."""
    try:
        if kubeconfig:
            return config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            cfg = k8s.Configuration()
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
            return k8s.ApiClient(cfg)
        return config.new_client_from_config()  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError, ValueError) as exc:
        raise StatusError(f"no Kubernetes credentials: {exc}") from None


@dataclass(frozen=True)
class RetryPolicy:
    """409 is redone at once (with jitter); 429, 5xx and transport errors back off until
    ``deadline_s``; anything else (403, 404, 422) fails at once."""

    conflicts: int = 30
    deadline_s: float = 60.0
    request_timeout_s: float = 15.0


class StatusWriter:
    """Reads and patches one EvalSchedule's status subresource."""

    def __init__(self, client: Any, target: StatusTarget, policy: RetryPolicy | None = None):
        self._api = k8s.CustomObjectsApi(client)
        self.target = target
        self.policy = policy or RetryPolicy()

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn`` with retries of transient errors; 409 and permanent errors go to the caller."""
        started, delay = time.monotonic(), 0.5
        while True:
            try:
                return fn(*args, _request_timeout=self.policy.request_timeout_s, **kwargs)
            except k8s.ApiException as exc:
                if exc.status == 409:
                    raise
                if exc.status not in (429, 500, 502, 503, 504):
                    hint = _HINTS.get(exc.status, "")
                    raise StatusError(
                        f"{what} EvalSchedule {self.target}: HTTP {exc.status} {exc.reason}{hint}"
                    ) from None
                problem = f"HTTP {exc.status} {exc.reason}"
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if time.monotonic() - started + delay > self.policy.deadline_s:
                raise StatusError(
                    f"{what} EvalSchedule {self.target}: gave up after "
                    f"{self.policy.deadline_s:g} s: {problem}"
                )
            time.sleep(delay)
            delay = min(delay * 2, 8.0)

    def read(self) -> dict[str, Any]:
        t = self.target
        obj: dict[str, Any] = self._call(
            "cannot read",
            self._api.get_namespaced_custom_object_status,
            GROUP,
            VERSION,
            t.namespace,
            PLURAL,
            t.name,
        )
        return obj

    def write_part(self, part: EvalPart, run: RunContext) -> dict[str, Any]:
        """Report ``part``; the status as written (retried on 409 from a fresh read)."""
        t = self.target
        for _ in range(self.policy.conflicts):
            obj = self.read()
            old = obj.get("status") or {}
            new = next_status(old, part, run)
            body = {
                "metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                "status": merge_patch(old, new),
            }
            try:
                self._call(
                    "cannot write the status of",
                    self._api.patch_namespaced_custom_object_status,
                    GROUP,
                    VERSION,
                    t.namespace,
                    PLURAL,
                    t.name,
                    body,
                    _content_type="application/merge-patch+json",
                )
            except k8s.ApiException:  # 409: someone wrote in between; redo on the fresh object
                time.sleep(random.uniform(0.0, 0.2))
                continue
            return new
        raise StatusError(
            f"cannot write the status of EvalSchedule {t}: still conflicting after "
            f"{self.policy.conflicts} attempts"
        )


__all__ = ["RetryPolicy", "StatusWriter", "api_client"]
