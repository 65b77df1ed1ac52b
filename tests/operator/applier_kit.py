"""The operator's Kubernetes client over an in-memory store, for the applier's tests without a
cluster (test_applier.py, test_applier_takeover.py).

:class:`InMemoryApi` replaces the one HTTP call of :class:`OperatorKube`; everything above it
(the applier, the watch cache, the call policy) runs as in the operator. Each fake answers a
:class:`Request` in :meth:`InMemoryApi.answer` the way the apiserver it stands for would.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from sleuth.operator.loop.applier import OperatorKube
from sleuth.operator.loop.metrics import OperatorMetrics
from sleuth.operator.loop.watchcache import WatchCache


@dataclass(frozen=True)
class Request:
    """One call the client would send."""

    method: str
    path: str
    query: list[tuple[str, str]] | None
    body: Any
    content_type: str
    accept: str


class InMemoryApi(OperatorKube):
    """OperatorKube whose requests reach :meth:`answer`; objects live in ``store`` by API path."""

    def __init__(self, cache: WatchCache, *, version: int = 0) -> None:
        super().__init__(object(), cache, OperatorMetrics(CollectorRegistry()))
        self.store: dict[str, dict[str, Any]] = {}
        self.version = version  # the last resourceVersion written

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> dict[str, Any] | None:
        return self.answer(Request(method, path, query, body, content_type, accept))

    def answer(self, request: Request) -> dict[str, Any] | None:
        raise NotImplementedError

    def read(self, path: str) -> dict[str, Any] | None:
        """A GET: a copy of the stored object, None for a 404."""
        return copy.deepcopy(self.store.get(path))

    def stamp(self, obj: dict[str, Any]) -> None:
        """A write: the object gets the next resourceVersion."""
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)

    def keep(self, path: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Store the object written; the answer is a copy of it."""
        self.store[path] = obj
        return copy.deepcopy(obj)
