"""The operator's one runtime object: built from the CLI's settings, handed to kopf as ``memo``.

It owns everything the control loop shares — the API client, the watch cache, the work queue,
its worker threads and the resync — so that no module holds state of its own:

- kopf's event handlers (:mod:`sleuth.operator.handlers`) record what they saw in the
  :class:`~sleuth.operator.watchcache.WatchCache` and enqueue the keys it concerns
  (:meth:`Runtime.agent_seen` and siblings): the object, and the objects whose reconcile reads it;
- ``workers`` threads drain the :class:`~sleuth.operator.workqueue.WorkQueue`, one reconcile per
  key (:meth:`Runtime.process`); retryable failures back off per key, permanent ones wait for a
  change or the next resync;
- every ``resync_seconds`` the resync enqueues every key the watches know, after one real list
  of AgentDeployments and ToolBindings per watched scope refreshed the cache the reconcilers read
  them from, and one
  list of each child kind's names forgot the children deleted without an event;
- :meth:`Runtime.stop` stops taking work and waits, at most ``shutdown_seconds``, for the
  reconciles in flight.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from sleuth.core.errors import SleuthError
from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    CONFIG_MAP,
    CRON_JOB,
    DEPLOYMENT,
    EVAL_SCHEDULE,
    NETWORK_POLICY,
    POD_DISRUPTION_BUDGET,
    PROMETHEUS_RULE,
    ROLE,
    ROLE_BINDING,
    SERVICE,
    SERVICE_ACCOUNT,
    TOOL_BINDING,
    Resource,
    new_api_client,
)
from sleuth.operator.applier import OperatorKube
from sleuth.operator.evalmetrics import EvalMetrics
from sleuth.operator.metrics import OperatorMetrics
from sleuth.operator.reconcile_agent import reconcile_agent
from sleuth.operator.reconcile_common import Context
from sleuth.operator.reconcile_eval import reconcile_eval
from sleuth.operator.reconcile_tool import reconcile_tool
from sleuth.operator.render.meta import AGENT_LABEL, MANAGED_BY, RenderSettings
from sleuth.operator.watchcache import Change, Key, WatchCache
from sleuth.operator.workqueue import Backoff, WorkQueue, run_workers

log = logging.getLogger("sleuth.operator")

Reconcile = Callable[[Context, str, str], Any]
RECONCILERS: dict[str, Reconcile] = {
    AGENT_DEPLOYMENT.kind: reconcile_agent,
    TOOL_BINDING.kind: reconcile_tool,
    EVAL_SCHEDULE.kind: reconcile_eval,
}

MANAGED = {"app.kubernetes.io/managed-by": MANAGED_BY}  # the label of every child it makes
CHILD_RESOURCES: tuple[Resource, ...] = (
    DEPLOYMENT,
    SERVICE,
    CONFIG_MAP,
    NETWORK_POLICY,
    POD_DISRUPTION_BUDGET,
    CRON_JOB,
    SERVICE_ACCOUNT,
    ROLE,
    ROLE_BINDING,
    PROMETHEUS_RULE,  # watched only where its CRD is served (kopf skips unserved resources)
)
"""Every kind of child the operator makes, each watched (:mod:`sleuth.operator.handlers`)."""

AWAITED = frozenset(
    {"SecretNotFound", "SecretNotAllowed", "SecretUnverifiable", "DatasetNotFound", "ChildConflict"}
)
"""Ready reasons naming an object no watch follows (a Secret, a dataset ConfigMap, an object of
someone else's with a child's name): the key is
looked at again with the per-key back-off (0.5 s doubling to ``--backoff-max-seconds``), so that
applying it after the resource that names it is noticed in seconds, not at the next resync."""


def awaits_unwatched(status: dict[str, Any] | None) -> bool:
    """Whether ``status`` (a reconcile's result) waits for an object no watch follows."""
    return any(
        c.get("type") == "Ready" and c.get("reason") in AWAITED
        for c in (status or {}).get("conditions") or []
    )


@dataclass(frozen=True)
class LoopSettings:
    """What ``sleuth operator`` was asked for (:mod:`sleuth.operator.cli` builds it)."""

    kubeconfig: str | None = None
    namespaces: tuple[str, ...] = ()
    resync_seconds: float = 300.0
    workers: int = 16
    shutdown_seconds: float = 10.0
    backoff: Backoff = field(default_factory=Backoff)
    render: RenderSettings = field(default_factory=RenderSettings)


@dataclass
class Runtime:
    """The control loop's shared state; one per process."""

    settings: LoopSettings
    ctx: Context
    cache: WatchCache
    metrics: OperatorMetrics
    evals: EvalMetrics
    queue: WorkQueue[Key]
    reconcilers: dict[str, Reconcile] = field(default_factory=lambda: dict(RECONCILERS))
    _threads: list[threading.Thread] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def build(
        cls,
        settings: LoopSettings,
        api: Any = None,
        registry: CollectorRegistry = REGISTRY,
        evals: EvalMetrics | None = None,
    ) -> Runtime:
        """Connect (``settings.kubeconfig``, else sleuth.core.kube's order) and wire it up; the
        metrics (and, unless given, a new eval-results collector) go into ``registry``."""
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
        if evals is None:
            evals = EvalMetrics()
            registry.register(evals)
        return cls(
            settings=settings,
            ctx=Context(kube=kube, settings=settings.render),
            cache=cache,
            metrics=metrics,
            evals=evals,
            queue=queue,
        )

    # -- the loop ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fill the ToolBinding cache and the children's names, start the workers and the
        resync."""
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
            status = self.reconcilers[kind](self.ctx, namespace, name)
            outcome = "success"
            if awaits_unwatched(status):  # no event will say it appeared: look again, backing off
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
        """One real list of AgentDeployments and of ToolBindings per watched scope into the cache
        (a failure leaves the reconcilers reading for themselves until the next one succeeds,
        and drops what a missed DELETED event left behind); with ``children``, also one list of
        each child kind's names: the applier creates a child none of them holds without reading
        it first, and the cache forgets the children deleted while a watch was away (kopf's
        relisting after "410 Gone" reports no deletions), so that the resync's reconciles read
        them absent and apply them again."""
        kube = self.ctx.kube
        if not isinstance(kube, OperatorKube):
            return
        scopes: list[str | None] = list(self.settings.namespaces) or [None]
        for resource in (AGENT_DEPLOYMENT, TOOL_BINDING):
            for scope in scopes:
                try:
                    items, version = kube.list_at(resource, scope)
                except SleuthError as err:
                    log.warning("listing %s in %s: %s", resource.plural, scope or "all", err)
                    continue
                self.cache.relisted(resource.kind, scope, items, version)
        if not children:
            return
        selector = ",".join(f"{k}={v}" for k, v in MANAGED.items())
        for resource in CHILD_RESOURCES:
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

    # -- what the watches report ------------------------------------------------------------

    def agent_seen(
        self, namespace: str, name: str, deleted: bool, body: dict[str, Any] | None = None
    ) -> None:
        """An AgentDeployment changed or went: it, its EvalSchedules and (when it appears or
        goes) its ToolBindings converge."""
        kind = AGENT_DEPLOYMENT.kind
        known = self.cache.has(kind, namespace, name)
        if body is not None:
            self.cache.keep(kind, body, deleted)
        if deleted:
            self.cache.gone_object(kind, namespace, name)
        else:
            self.cache.seen_object(kind, namespace, name, None)
        self.queue.add((kind, namespace, name))
        if deleted or not known:
            for binding in self.cache.naming(TOOL_BINDING.kind, namespace, name):
                self.queue.add((TOOL_BINDING.kind, namespace, binding))
        self._wake_schedules(namespace, name)

    def binding_seen(
        self,
        namespace: str,
        name: str,
        agent: str | None,
        deleted: bool,
        body: dict[str, Any] | None = None,
    ) -> None:
        """A ToolBinding changed or went: it, the agent it names (and named before) converge."""
        kind = TOOL_BINDING.kind
        if body is not None:
            self.cache.keep(kind, body, deleted)
        if deleted:
            before = self.cache.gone_object(kind, namespace, name)
        else:
            before = self.cache.seen_object(kind, namespace, name, agent)
        self.queue.add((kind, namespace, name))
        for named in dict.fromkeys(a for a in (before, agent) if a):
            self.queue.add((AGENT_DEPLOYMENT.kind, namespace, named))
            self._wake_schedules(namespace, named)  # their embeddings follow the retrieval

    def schedule_seen(
        self, namespace: str, name: str, agent: str | None, deleted: bool, spec_seen: bool
    ) -> None:
        """An EvalSchedule changed or went; ``spec_seen``: only its status changed since its
        last reconcile (its runs' results), which changes nothing to reconcile."""
        kind = EVAL_SCHEDULE.kind
        if deleted:
            self.cache.gone_object(kind, namespace, name)
        else:
            self.cache.seen_object(kind, namespace, name, agent)
        if deleted or not spec_seen:
            self.queue.add((kind, namespace, name))

    def child_seen(self, body: dict[str, Any], deleted: bool) -> None:
        """A managed child changed or went: record its fingerprint; converge its owner when
        anything the owner reads of it changed, and a tool's agent when the tool's Deployment
        started or stopped serving (the agent reads nothing else of its tools' children)."""
        if deleted:
            self.cache.gone_child(body)
            change = Change(owner=True, serving=True)
        else:
            change = self.cache.seen_child(body)
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace")
        if not namespace or not change.owner:
            return
        for ref in meta.get("ownerReferences") or []:
            if not ref.get("controller") or ref.get("kind") not in self.reconcilers:
                continue
            if not str(ref.get("apiVersion", "")).startswith(AGENT_DEPLOYMENT.api_version):
                continue
            self.queue.add((ref["kind"], namespace, ref["name"]))
            agent = (meta.get("labels") or {}).get(AGENT_LABEL)
            tool_serving = body.get("kind") == DEPLOYMENT.kind and change.serving
            if ref["kind"] == TOOL_BINDING.kind and agent and tool_serving:
                self.queue.add((AGENT_DEPLOYMENT.kind, namespace, agent))

    def _wake_schedules(self, namespace: str, agent: str) -> None:
        for schedule in self.cache.naming(EVAL_SCHEDULE.kind, namespace, agent):
            self.queue.add((EVAL_SCHEDULE.kind, namespace, schedule))


__all__ = [
    "AWAITED",
    "CHILD_RESOURCES",
    "MANAGED",
    "RECONCILERS",
    "LoopSettings",
    "Runtime",
    "awaits_unwatched",
]
