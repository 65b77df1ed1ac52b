"""kopf handlers, kept thin: each records what its watch saw and enqueues keys; nothing here
reconciles.

The state they share is one :class:`~sleuth.operator.controller.Controller`, built by the CLI and
handed to kopf as the operator's ``memo`` (``memo.controller``): its loop's work queue, workers
(started at start-up, drained at clean-up) and watch cache. Watch events — ADDED/MODIFIED, the
initial listing when the operator starts (create, update and resume alike), DELETED — of the three
kinds and of every kind of child the operator makes (Deployments, Services, ConfigMaps,
NetworkPolicies, PodDisruptionBudgets, CronJobs, ServiceAccounts, Roles, RoleBindings and, where its
CRD is served, PrometheusRules) enqueue the keys they concern, so a deleted or edited child is put
back at its next event and readiness is reported as soon as pods become ready.

No kopf timers or daemons: kopf guards objects that have them with a finalizer, which would leave
AgentDeployments undeletable whenever the operator is not running. Without them, kopf adds no
finalizer (and removes one an older version added). The handlers are coroutines that only
enqueue, so kopf never waits on a reconcile, and stops at once on SIGTERM.

kopf connects with the reconcilers' credentials (:func:`login`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import kopf

from sleuth.core.api.v1alpha1.common import GROUP, VERSION
from sleuth.core.kube import AGENT_DEPLOYMENT, EVAL_SCHEDULE, TOOL_BINDING
from sleuth.operator.controller import CHILD_RESOURCES, MANAGED, Controller
from sleuth.operator.loop.login import connection_info

log = logging.getLogger("sleuth.operator")

LIST_CHUNK = 250  # objects per page of a listing
IDLE_WORKER_SECONDS = 0.5


class NoDiffBase(kopf.DiffBaseStorage):
    """kopf builds a diff base for every watch event — a deep copy of the body less its status,
    for on.create/on.update handlers to compare — and then a diff. With event handlers only,
    nothing reads either: this one builds an empty one, so that a Deployment's status update
    costs kopf no copy of the Deployment."""

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def controller_of(memo: Any) -> Controller:
    controller: Controller = memo.controller
    return controller


@kopf.on.login()
def login(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> kopf.ConnectionInfo:
    """kopf watches with the credentials the reconcilers write with."""
    api = controller_of(memo).loop.kube.api
    return connection_info(api.configuration, settings.networking.trust_env)


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: Any, **_: Any) -> None:
    settings.posting.level = logging.WARNING  # our Events are the transitions, not kopf's logs
    settings.watching.server_timeout = 120
    # The initial listing (and a relisting after "410 Gone") in pages: at 1,000 agents one page
    # per kind would be tens of MB of JSON parsed at once, and the peak stays in the RSS.
    settings.watching.chunk_size = LIST_CHUNK
    settings.watching.client_timeout = 150
    # kopf keeps a task per object, and the body of its last event, until the object has had
    # no event for this long (default 5 s): after a start or a relisting, that is every object
    # of every watched kind at once, the operator's peak memory.
    settings.queueing.idle_timeout = IDLE_WORKER_SECONDS
    settings.persistence.diffbase_storage = NoDiffBase()
    await asyncio.to_thread(controller_of(memo).start)


@kopf.on.cleanup()
async def drain(memo: Any, **_: Any) -> None:
    """Take no more work; let the reconciles in flight finish (bounded)."""
    await asyncio.to_thread(controller_of(memo).stop)


@kopf.on.event(GROUP, VERSION, AGENT_DEPLOYMENT.plural)
async def agent_event(
    type: str | None, namespace: str | None, name: str, event: Any, memo: Any, **_: Any
) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    controller_of(memo).agent_seen(namespace, name, deleted=type == "DELETED", body=event["object"])


@kopf.on.event(GROUP, VERSION, TOOL_BINDING.plural)
async def binding_event(
    type: str | None, namespace: str | None, name: str, event: Any, memo: Any, **_: Any
) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    body = event["object"]
    controller_of(memo).binding_seen(
        namespace, name, agent_of(body), deleted=type == "DELETED", body=body
    )


@kopf.on.event(GROUP, VERSION, EVAL_SCHEDULE.plural)
async def eval_event(
    type: str | None, namespace: str | None, name: str, body: kopf.Body, memo: Any, **_: Any
) -> None:
    """Export the run results the event carries; reconcile unless only the status changed.

    The runs write their results into status: such an event (and the one our own status write
    causes) leaves ``metadata.generation == status.observedGeneration``, and reconciling again
    would change nothing; the initial listing and any spec change do reconcile, and the resync
    still visits every schedule. kopf delivers one object's events in order, so the results of
    a deleted schedule are forgotten after the last ones are exported.
    """
    assert namespace is not None, "sleuth kinds are namespaced"
    controller = controller_of(memo)
    deleted = type == "DELETED"
    if deleted:
        controller.evals.forget(namespace, name, body.get("metadata", {}).get("uid"))
    else:
        controller.evals.observe(body)
    spec_seen = type == "MODIFIED" and status_only(body)
    controller.schedule_seen(namespace, name, agent_of(body), deleted=deleted, spec_seen=spec_seen)


def agent_of(body: kopf.Body | dict[str, Any]) -> str | None:
    """The AgentDeployment a ToolBinding or EvalSchedule names."""
    name = ((body.get("spec") or {}).get("agentRef") or {}).get("name")
    return str(name) if name else None


def status_only(body: kopf.Body | dict[str, Any]) -> bool:
    """The spec is the one last reconciled (a change since then would raise the generation)."""
    generation = body.get("metadata", {}).get("generation")
    observed = (body.get("status") or {}).get("observedGeneration")
    return generation is not None and generation == observed


async def child_event(type: str | None, event: Any, memo: Any, **_: Any) -> None:
    """A managed child changed or vanished: converge its owner (and the owner's agent)."""
    controller_of(memo).child_seen(event["object"], deleted=type == "DELETED")


for _child in CHILD_RESOURCES:
    _group, _, _version = _child.api_version.rpartition("/")
    kopf.on.event(_group, _version, _child.plural, labels=MANAGED, id=f"child-{_child.plural}")(
        child_event
    )


__all__ = [
    "CHILD_RESOURCES",
    "NoDiffBase",
    "agent_event",
    "agent_of",
    "binding_event",
    "child_event",
    "configure",
    "controller_of",
    "drain",
    "eval_event",
    "login",
    "status_only",
]
