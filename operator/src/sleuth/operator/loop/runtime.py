"""The control loop: one object owning what every reconcile shares, knowing nothing of what
they reconcile.

It owns the API client (:class:`~sleuth.operator.loop.applier.OperatorKube`), the watch cache, the
work queue, its worker threads and the resync, so that no module holds state of its own. What it
runs is handed to it: one reconcile function per kind (``reconcilers``), the kinds whose objects
the resync lists whole (``listed``), the kinds of child it lists the names of (``children``,
selected by the ``managed`` labels), and which results wait for something no watch follows
(``look_again``). sleuth's controller (:mod:`sleuth.operator.controller`) wires its reconcilers
on it and maps each watch event to the keys it enqueues.

- ``workers`` threads drain the :class:`~sleuth.operator.loop.workqueue.WorkQueue`, one
  reconcile per key (:meth:`Loop.process`); retryable failures back off per key, permanent ones
  wait for a change or the next resync;
- every ``resync_seconds`` the resync enqueues every key the watches know, after one real list
  of the ``listed`` kinds per watched scope refreshed the cache the reconcilers read them from,
  and one list of each child kind's names forgot the children deleted without an event;
- :meth:`Loop.stop` stops taking work and waits, at most ``shutdown_seconds``, for the
  reconciles in flight.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from sleuth.core.errors import SleuthError
from sleuth.core.kube import Resource, new_api_client
from sleuth.operator.loop.applier import OperatorKube
from sleuth.operator.loop.metrics import OperatorMetrics
from sleuth.operator.loop.watchcache import Key, WatchCache
from sleuth.operator.loop.workqueue import Backoff, WorkQueue, run_workers

log = logging.getLogger("sleuth.operator")

Reconcile = Callable[[str, str], dict[str, Any] | None]
"""One kind's reconcile: (namespace, name) -> the status it wrote (None: the object is gone)."""


def _never(status: dict[str, Any] | None) -> bool:
    return False


@dataclass(frozen=True)
class LoopSettings:
    """How the loop runs (:mod:`sleuth.operator.main` builds it from ``sleuth operator``'s
    flags)."""

    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()
    resync_seconds: float = 300.0
    workers: int = 16
    shutdown_seconds: float = 10.0
    backoff: Backoff = field(default_factory=Backoff)


@dataclass
class Loop:
    """The control loop's shared state; one per process."""

    settings: LoopSettings
    kube: OperatorKube
    cache: WatchCache
    metrics: OperatorMetrics
    queue: WorkQueue[Key]
    reconcilers: dict[str, Reconcile] = field(default_factory=dict)
    listed: tuple[Resource, ...] = ()
    children: tuple[Resource, ...] = ()
    managed: Mapping[str, str] = field(default_factory=dict)
    look_again: Callable[[dict[str, Any] | None], bool] = _never
    _threads: list[threading.Thread] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def build(
        cls,
        settings: LoopSettings,
        api: Any = None,
        registry: CollectorRegistry = REGISTRY,
        *,
        listed: tuple[Resource, ...] = (),
        children: tuple[Resource, ...] = (),
        managed: Mapping[str, str] | None = None,
        look_again: Callable[[dict[str, Any] | None], bool] = _never,
    ) -> Loop:
        """Connect (``settings.kubeconfig``, else sleuth.core.kube's order) and wire it up; its
        metrics go into ``registry``. It runs nothing until given its reconcilers (which need
        its client, :attr:`kube`)."""
        cache = WatchCache()
        metrics = OperatorMetrics(registry)
        kube = OperatorKube(
            api
            if api is not None
            else new_api_client(settings.kubeconfig, connections=settings.workers + 2),
            cache,
            metrics,
        )
        queue: WorkQueue[Key] = WorkQueue(backoff=settings.backoff)
        metrics.follow_queue(queue.__len__)
        return cls(
            settings=settings,
            kube=kube,
            cache=cache,
            metrics=metrics,
            queue=queue,
            listed=listed,
            children=children,
            managed=dict(managed or {}),
            look_again=look_again,
        )

    # -- the loop ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fill the cache of the ``listed`` kinds and the children's names, start the workers and
        the resync."""
        self.relist(children=True)
        self._threads = run_workers(self.queue, self.process, self.settings.workers, "reconcile")
        resync = threading.Thread(target=self._resync_forever, name="resync", daemon=True)
        resync.start()
        self._threads.append(resync)

    def stop(self) -> bool:
        """Take no more work; wait (bounded) for the reconciles in flight. Whether all ended."""
        self._stopping.set()
        self.queue.shut_down()
        finished = self.queue.wait_idle(self.settings.shutdown_seconds)
        if not finished:
            log.warning(
                "stopping with %d reconciles still running after %s s",
                self.queue.running(),
                self.settings.shutdown_seconds,
            )
        return finished

    def process(self, key: Key) -> None:
        """Reconcile one key, then forget its failures or back it off (the worker body)."""
        kind, namespace, name = key
        started, outcome = time.monotonic(), "error"
        try:
            status = self.reconcilers[kind](namespace, name)
            outcome = "success"
            if self.look_again(status):  # no event will say it appeared: look again, backing off
                self.queue.retry(key)
            else:
                self.queue.forget(key)
            self.metrics.track(kind, namespace, name, status)
        except SleuthError as err:
            if err.retryable:
                outcome = "retryable_error"
                delay = self.queue.retry(key)
                log.warning("%s %s/%s: %s (retry in %.1f s)", kind, namespace, name, err, delay)
            else:  # only a change (an event) or the next resync tries again
                outcome = "permanent_error"
                self.queue.forget(key)
                log.error("%s %s/%s: %s", kind, namespace, name, err)
        except Exception:  # a bug: back off, keep the worker
            delay = self.queue.retry(key)
            log.exception("%s %s/%s failed (retry in %.1f s)", kind, namespace, name, delay)
        finally:
            self.metrics.observe(kind, outcome, time.monotonic() - started)

    def relist(self, children: bool = False) -> None:
        """One real list of each ``listed`` kind per watched scope into the cache (a failure
        leaves the reconcilers reading for themselves until the next one succeeds, and drops
        what a missed DELETED event left behind); with ``children``, also one list of each child
        kind's names: the applier creates a child none of them holds without reading
        it first, and the cache forgets the children deleted while a watch was away (kopf's
        relisting after "410 Gone" reports no deletions), so that the resync's reconciles read
        them absent and apply them again."""
        kube = self.kube
        scopes: list[str | None] = list(self.settings.namespaces) or [None]
        for resource in self.listed:
            for scope in scopes:
                try:
                    items, version = kube.list_at(resource, scope)
                except SleuthError as err:
                    log.warning("listing %s in %s: %s", resource.plural, scope or "all", err)
                    continue
                self.cache.relisted(resource.kind, scope, items, version)
        if not children:
            return
        selector = ",".join(f"{k}={v}" for k, v in self.managed.items())
        for resource in self.children:
            for scope in scopes:
                try:
                    names, version = kube.names_at(resource, scope, selector)
                except SleuthError as err:
                    log.warning("listing %s in %s: %s", resource.plural, scope or "all", err)
                    continue
                for key in self.cache.relisted_children(resource, scope, names, version):
                    log.warning("%s %s/%s went without an event: applied again", *key[1:])

    def resync_once(self) -> int:
        """Enqueue every object the watches know; returns how many."""
        keys = self.cache.keys()
        for key in keys:
            self.queue.add(key)
        return len(keys)

    def _resync_forever(self) -> None:
        while not self._stopping.wait(self.settings.resync_seconds):
            log.info("resync: relisting")
            self.relist(children=True)
            log.info("resync: %d objects enqueued", self.resync_once())


__all__ = ["Loop", "LoopSettings", "Reconcile"]
