"""sleuth's controller on the loop: what it reconciles, what it watches, whom each event wakes.

The loop (:mod:`sleuth.operator.loop`) knows how to run reconciles; this module tells it what to
run. :meth:`Controller.build` gives a :class:`~sleuth.operator.loop.runtime.Loop` the reconcile of
each kind (:data:`RECONCILERS`), the kinds the resync lists whole (:data:`LISTED`), the kinds of
child the operator makes and watches (:data:`CHILD_RESOURCES`, all labelled :data:`MANAGED`) and
the reasons that wait for an object no watch follows (:data:`AWAITED`). kopf's event handlers
(:mod:`sleuth.operator.handlers`) record what they saw through :meth:`Controller.agent_seen` and
its siblings, which enqueue the keys it concerns: the object, and the objects whose reconcile
reads it. The one :class:`Controller` is built by the CLI and handed to kopf as ``memo``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    CONFIG_MAP,
    CRON_JOB,
    DEPLOYMENT,
    EVAL_SCHEDULE,
    HORIZONTAL_POD_AUTOSCALER,
    NETWORK_POLICY,
    POD_DISRUPTION_BUDGET,
    PROMETHEUS_RULE,
    ROLE,
    ROLE_BINDING,
    SCALED_OBJECT,
    SERVICE,
    SERVICE_ACCOUNT,
    TOOL_BINDING,
    Resource,
)
from sleuth.operator.evalmetrics import EvalMetrics
from sleuth.operator.loop.runtime import Loop, LoopSettings
from sleuth.operator.loop.watchcache import Change
from sleuth.operator.reconcile_agent import reconcile_agent
from sleuth.operator.reconcile_common import Context
from sleuth.operator.reconcile_eval import reconcile_eval
from sleuth.operator.reconcile_tool import reconcile_tool
from sleuth.operator.render.meta import AGENT_LABEL, MANAGED_BY, RenderSettings

Reconcile = Callable[[Context, str, str], dict[str, Any] | None]
RECONCILERS: dict[str, Reconcile] = {
    AGENT_DEPLOYMENT.kind: reconcile_agent,
    TOOL_BINDING.kind: reconcile_tool,
    EVAL_SCHEDULE.kind: reconcile_eval,
}

LISTED: tuple[Resource, ...] = (AGENT_DEPLOYMENT, TOOL_BINDING)
"""The kinds every reconcile reads, served from the watch cache once a real list filled it."""

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
    HORIZONTAL_POD_AUTOSCALER,
    SCALED_OBJECT,  # KEDA's: likewise
)
"""Every kind of child the operator makes, each watched (:mod:`sleuth.operator.handlers`)."""

AWAITED = frozenset(
    {"SecretNotFound", "SecretNotAllowed", "SecretUnverifiable", "DatasetNotFound", "ChildConflict"}
)
"""Ready reasons naming an object no watch follows (a Secret, a dataset ConfigMap, an object of
someone else's with a child's name): the key is looked at again with the per-key back-off (0.5 s
doubling to ``--backoff-max-seconds``), so that applying it after the resource that names it is
noticed in seconds, not at the next resync."""


def awaits_unwatched(status: dict[str, Any] | None) -> bool:
    """Whether ``status`` (a reconcile's result) waits for an object no watch follows."""
    return any(
        c.get("type") == "Ready" and c.get("reason") in AWAITED
        for c in (status or {}).get("conditions") or []
    )


@dataclass(frozen=True)
class OperatorSettings:
    """What ``sleuth operator`` was asked for (:mod:`sleuth.operator.cli` builds it): how the
    loop runs and what the renderers write."""

    loop: LoopSettings = field(default_factory=LoopSettings)
    render: RenderSettings = field(default_factory=RenderSettings)


@dataclass
class Controller:
    """The loop with sleuth's reconcilers, the reconcilers' context and the eval results."""

    loop: Loop
    ctx: Context
    evals: EvalMetrics

    @classmethod
    def build(
        cls,
        settings: OperatorSettings,
        api: Any = None,
        registry: CollectorRegistry = REGISTRY,
        evals: EvalMetrics | None = None,
    ) -> Controller:
        """Connect (``settings.loop.kubeconfig``, else sleuth.core.kube's order) and wire it up;
        the loop's metrics (and, unless given, a new eval-results collector) go into
        ``registry``."""
        loop = Loop.build(
            settings.loop,
            api,
            registry,
            listed=LISTED,
            children=CHILD_RESOURCES,
            managed=MANAGED,
            look_again=awaits_unwatched,
        )
        ctx = Context(kube=loop.kube, settings=settings.render)
        loop.reconcilers.update({kind: partial(fn, ctx) for kind, fn in RECONCILERS.items()})
        if evals is None:
            evals = EvalMetrics()
            registry.register(evals)
        return cls(loop=loop, ctx=ctx, evals=evals)

    def start(self) -> None:
        self.loop.start()

    def stop(self) -> bool:
        return self.loop.stop()

    # -- what the watches report ------------------------------------------------------------

    def agent_seen(
        self, namespace: str, name: str, deleted: bool, body: dict[str, Any] | None = None
    ) -> None:
        """An AgentDeployment changed or went: it, its EvalSchedules and (when it appears or
        goes) its ToolBindings converge."""
        kind = AGENT_DEPLOYMENT.kind
        known = self.loop.cache.has(kind, namespace, name)
        if body is not None:
            self.loop.cache.keep(kind, body, deleted)
        if deleted:
            self.loop.cache.gone_object(kind, namespace, name)
        else:
            self.loop.cache.seen_object(kind, namespace, name, None)
        self.loop.queue.add((kind, namespace, name))
        if deleted or not known:
            for binding in self.loop.cache.naming(TOOL_BINDING.kind, namespace, name):
                self.loop.queue.add((TOOL_BINDING.kind, namespace, binding))
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
            self.loop.cache.keep(kind, body, deleted)
        if deleted:
            before = self.loop.cache.gone_object(kind, namespace, name)
        else:
            before = self.loop.cache.seen_object(kind, namespace, name, agent)
        self.loop.queue.add((kind, namespace, name))
        for named in dict.fromkeys(a for a in (before, agent) if a):
            self.loop.queue.add((AGENT_DEPLOYMENT.kind, namespace, named))
            self._wake_schedules(namespace, named)  # their embeddings follow the retrieval

    def schedule_seen(
        self, namespace: str, name: str, agent: str | None, deleted: bool, spec_seen: bool
    ) -> None:
        """An EvalSchedule changed or went; ``spec_seen``: only its status changed since its
        last reconcile (its runs' results), which changes nothing to reconcile."""
        kind = EVAL_SCHEDULE.kind
        if deleted:
            before = self.loop.cache.gone_object(kind, namespace, name)
        else:
            before = self.loop.cache.seen_object(kind, namespace, name, agent)
        if deleted or not spec_seen:
            self.loop.queue.add((kind, namespace, name))
        # The agent admits its schedules' Jobs (render/access.py): it follows their comings
        # and goings, and a schedule that moved to another agent.
        if deleted or (not spec_seen and before != agent):
            for named in dict.fromkeys(a for a in (before, agent) if a):
                self.loop.queue.add((AGENT_DEPLOYMENT.kind, namespace, named))

    def child_seen(self, body: dict[str, Any], deleted: bool) -> None:
        """A managed child changed or went: record its fingerprint; converge its owner when
        anything the owner reads of it changed, and a tool's agent when the tool's Deployment
        started or stopped serving (the agent reads nothing else of its tools' children)."""
        if deleted:
            self.loop.cache.gone_child(body)
            change = Change(owner=True, serving=True)
        else:
            change = self.loop.cache.seen_child(body)
        meta = body.get("metadata") or {}
        namespace = meta.get("namespace")
        if not namespace or not change.owner:
            return
        for ref in meta.get("ownerReferences") or []:
            if not ref.get("controller") or ref.get("kind") not in self.loop.reconcilers:
                continue
            if not str(ref.get("apiVersion", "")).startswith(AGENT_DEPLOYMENT.api_version):
                continue
            self.loop.queue.add((ref["kind"], namespace, ref["name"]))
            agent = (meta.get("labels") or {}).get(AGENT_LABEL)
            tool_serving = body.get("kind") == DEPLOYMENT.kind and change.serving
            if ref["kind"] == TOOL_BINDING.kind and agent and tool_serving:
                self.loop.queue.add((AGENT_DEPLOYMENT.kind, namespace, agent))

    def _wake_schedules(self, namespace: str, agent: str) -> None:
        for schedule in self.loop.cache.naming(EVAL_SCHEDULE.kind, namespace, agent):
            self.loop.queue.add((EVAL_SCHEDULE.kind, namespace, schedule))


__all__ = [
    "AWAITED",
    "CHILD_RESOURCES",
    "LISTED",
    "MANAGED",
    "RECONCILERS",
    "Controller",
    "OperatorSettings",
    "awaits_unwatched",
]
