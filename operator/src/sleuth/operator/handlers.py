"""kopf handlers, kept thin: each one wakes the level-based reconcile of what it concerns.

Watch events (ADDED/MODIFIED, and the initial listing when the operator starts: create, update
and resume alike) and a periodic resync of every object run the same reconcile. Events of managed
children (Deployments, Services, ConfigMaps, NetworkPolicies) wake their owner, so a deleted or
edited child is put back at once and readiness is reported as soon as pods become ready.

The resync is one operator-wide loop, not kopf timers: kopf guards objects that have timers with
a finalizer, which would leave AgentDeployments undeletable whenever the operator is not running.
Without timers, kopf adds no finalizer (and removes one an older version added).

kopf connects with the reconcilers' credentials (:func:`login`), found in the one order of
:mod:`sleuth.core.kube`: ``--kubeconfig`` (passed as ``SLEUTH_OPERATOR_KUBECONFIG``), else
in-cluster, else ``$KUBECONFIG`` or ``~/.kube/config``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf

from sleuth.core.api.v1alpha1.common import GROUP, VERSION
from sleuth.core.errors import SleuthError
from sleuth.core.kube import (
    AGENT_DEPLOYMENT,
    EVAL_SCHEDULE,
    TOOL_BINDING,
    Kube,
    new_api_client,
)
from sleuth.operator.evalmetrics import eval_metrics
from sleuth.operator.login import connection_info
from sleuth.operator.metrics import operator_metrics
from sleuth.operator.reconcile_agent import reconcile_agent
from sleuth.operator.reconcile_common import Context
from sleuth.operator.reconcile_eval import reconcile_eval
from sleuth.operator.reconcile_tool import reconcile_tool
from sleuth.operator.render.meta import AGENT_LABEL, MANAGED_BY, RenderSettings
from sleuth.operator.render.tracing import TracingDefaults

log = logging.getLogger("sleuth.operator")

RESYNC_SECONDS = float(os.environ.get("SLEUTH_RESYNC_SECONDS", "30"))
NAMESPACES = [n for n in os.environ.get("SLEUTH_NAMESPACES", "").split(",") if n]
MANAGED = {"app.kubernetes.io/managed-by": MANAGED_BY}
CHILD_RESOURCES = [
    ("apps", "v1", "deployments"),
    ("", "v1", "services"),
    ("", "v1", "configmaps"),
    ("networking.k8s.io", "v1", "networkpolicies"),
    ("batch", "v1", "cronjobs"),
]

Reconcile = Callable[[Context, str, str], Any]

_context: list[Context] = []
_locks: dict[tuple[str, str, str], threading.Lock] = {}
_locks_guard = threading.Lock()
_tasks: list[asyncio.Task[None]] = []
_bound_to: dict[tuple[str, str], str] = {}  # ToolBinding → the agent it named when last seen


def settings_from_env() -> RenderSettings:
    """Images from ``SLEUTH_IMAGE`` (sleuth) and ``SLEUTH_MODEL_IMAGE`` (vLLM), and the runbook
    links of the rendered alerts from ``SLEUTH_RUNBOOK_BASE_URL``, when set."""
    defaults = RenderSettings()
    return dataclasses.replace(
        defaults,
        sleuth_image=os.environ.get("SLEUTH_IMAGE") or defaults.sleuth_image,
        model_image=os.environ.get("SLEUTH_MODEL_IMAGE") or defaults.model_image,
        runbook_base_url=os.environ.get("SLEUTH_RUNBOOK_BASE_URL") or defaults.runbook_base_url,
        **workload_placement(os.environ.get("SLEUTH_WORKLOAD_PLACEMENT", "")),
        tracing=TracingDefaults.from_text(os.environ.get("SLEUTH_TRACING", "")),
    )


def workload_placement(text: str) -> dict[str, Any]:
    """``--workload-placement`` JSON (``{"nodeSelector": {...}, "tolerations": [...]}``) as
    RenderSettings fields; empty text: none."""
    if not text:
        return {}
    placement = json.loads(text)
    return {
        "workload_node_selector": {
            str(k): str(v) for k, v in placement.get("nodeSelector", {}).items()
        },
        "workload_tolerations": list(placement.get("tolerations", [])),
    }


def _ctx() -> Context:
    if not _context:
        api = new_api_client(os.environ.get("SLEUTH_OPERATOR_KUBECONFIG") or None)
        _context.append(Context(kube=Kube(api), settings=settings_from_env()))
    return _context[0]


def _run(fn: Reconcile, kind: str, namespace: str, name: str) -> None:
    """Run one reconcile, one at a time per object, applying the error policy."""
    metrics = operator_metrics()
    with _lock(kind, namespace, name):
        started, outcome = time.monotonic(), "error"
        try:
            status = fn(_ctx(), namespace, name)
            outcome = "success"
        except SleuthError as err:
            if err.retryable:
                outcome = "retryable_error"
                raise kopf.TemporaryError(f"{kind} {namespace}/{name}: {err}", delay=5) from err
            # Not retried on events; the resync tries again, quietly, at its interval.
            outcome = "permanent_error"
            log.error("%s %s/%s: %s", kind, namespace, name, err)
        else:
            metrics.track(kind, namespace, name, status)
        finally:
            metrics.observe(kind, outcome, time.monotonic() - started)


def _lock(kind: str, namespace: str, name: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((kind, namespace, name), threading.Lock())


def _forget(kind: str, namespace: str, name: str, uid: str | None = None) -> None:
    """Drop a deleted object's series, after any reconcile of it still in flight (same lock):
    otherwise a resync that read the object just before the delete writes its gauge back."""
    with _lock(kind, namespace, name):
        operator_metrics().track(kind, namespace, name, None)
        if kind == EVAL_SCHEDULE.kind:
            eval_metrics().forget(namespace, name, uid)


@kopf.on.login()
def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo:
    """kopf watches with the credentials the reconcilers write with."""
    return connection_info(_ctx().kube.api.configuration, settings.networking.trust_env)


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.level = logging.WARNING  # our Events are the transitions, not kopf's logs
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    _ctx()
    _tasks.append(asyncio.get_running_loop().create_task(_resync_forever()))


@kopf.on.cleanup()
async def stop_resync(**_: Any) -> None:
    for task in _tasks:
        task.cancel()


async def _resync_forever() -> None:
    while True:
        await asyncio.sleep(RESYNC_SECONDS)
        try:
            await asyncio.to_thread(resync_once)
        except Exception:  # the loop must outlive any one failure
            log.exception("resync failed; trying again in %s s", RESYNC_SECONDS)


def resync_once() -> None:
    """Reconcile every AgentDeployment, ToolBinding and EvalSchedule in the watched namespaces."""
    kube = _ctx().kube
    done = failed = 0
    scopes: list[str | None] = list(NAMESPACES) or [None]
    for namespace in scopes:
        for resource, fn in (
            (AGENT_DEPLOYMENT, reconcile_agent),
            (TOOL_BINDING, reconcile_tool),
            (EVAL_SCHEDULE, reconcile_eval),
        ):
            for obj in kube.list(resource, namespace):
                meta = obj["metadata"]
                try:
                    _run(fn, resource.kind, meta["namespace"], meta["name"])
                    done += 1
                except kopf.TemporaryError as err:
                    failed += 1
                    log.warning("resync: %s", err)
    log.info("resync: %d objects reconciled, %d to retry", done, failed)


@kopf.on.event(GROUP, VERSION, AGENT_DEPLOYMENT.plural)
def agent_event(type: str, namespace: str | None, name: str, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    if type == "DELETED":
        _forget(AGENT_DEPLOYMENT.kind, namespace, name)
        for binding in _bindings_of(namespace, name):
            _run(reconcile_tool, TOOL_BINDING.kind, namespace, binding)
        _wake_schedules(namespace, name)
        return
    _run(reconcile_agent, AGENT_DEPLOYMENT.kind, namespace, name)
    _wake_schedules(namespace, name)


def _wake_schedules(namespace: str, agent: str) -> None:
    """The agent's EvalSchedules follow it (its model endpoint, its existence) at once.

    Their failures are theirs: logged here and retried by the resync, never the agent's handler's.
    """
    for schedule in _ctx().kube.list(EVAL_SCHEDULE, namespace):
        if (schedule.get("spec") or {}).get("agentRef", {}).get("name") != agent:
            continue
        try:
            _run(reconcile_eval, EVAL_SCHEDULE.kind, namespace, schedule["metadata"]["name"])
        except kopf.TemporaryError as err:
            log.warning("%s", err)


@kopf.on.event(GROUP, VERSION, TOOL_BINDING.plural)
def binding_event(type: str, namespace: str | None, name: str, body: kopf.Body, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    if type != "DELETED":
        _run(reconcile_tool, TOOL_BINDING.kind, namespace, name)
    else:
        _forget(TOOL_BINDING.kind, namespace, name)
    agent = (body.get("spec") or {}).get("agentRef", {}).get("name")
    previous = _bound_to.pop((namespace, name), None)
    if type != "DELETED" and agent:
        _bound_to[(namespace, name)] = agent
    if previous and previous != agent:  # re-pointed: the old agent drops the tool now
        _run(reconcile_agent, AGENT_DEPLOYMENT.kind, namespace, previous)
        _wake_schedules(namespace, previous)
    if agent:
        _run(reconcile_agent, AGENT_DEPLOYMENT.kind, namespace, agent)
        _wake_schedules(namespace, agent)  # their embeddings follow the agent's retrieval


@kopf.on.event(GROUP, VERSION, EVAL_SCHEDULE.plural)
def eval_event(type: str, namespace: str | None, name: str, body: kopf.Body, **_: Any) -> None:
    """Export the run results the event carries; reconcile unless only the status changed.

    The runs write their results into status: such an event (and the one our own status write
    causes) leaves ``metadata.generation == status.observedGeneration``, and reconciling again
    would change nothing; the initial listing and any spec change do reconcile, and the resync
    still visits every schedule.
    """
    assert namespace is not None, "sleuth kinds are namespaced"
    if type == "DELETED":
        _forget(EVAL_SCHEDULE.kind, namespace, name, body.get("metadata", {}).get("uid"))
        return
    with _lock(EVAL_SCHEDULE.kind, namespace, name):
        eval_metrics().observe(body)
    if type == "MODIFIED" and _status_only(body):
        return
    _run(reconcile_eval, EVAL_SCHEDULE.kind, namespace, name)


def _status_only(body: kopf.Body) -> bool:
    """The spec is the one last reconciled (a change since then would raise the generation)."""
    generation = body.get("metadata", {}).get("generation")
    observed = (body.get("status") or {}).get("observedGeneration")
    return generation is not None and generation == observed


def child_event(namespace: str | None, body: kopf.Body, **_: Any) -> None:
    """A managed child changed or vanished: converge its owner (and the owner's agent)."""
    if namespace is None:
        return
    for ref in body.get("metadata", {}).get("ownerReferences") or []:
        if not ref.get("controller") or not str(ref.get("apiVersion", "")).startswith(GROUP):
            continue
        if ref.get("kind") == AGENT_DEPLOYMENT.kind:
            _run(reconcile_agent, AGENT_DEPLOYMENT.kind, namespace, ref["name"])
        elif ref.get("kind") == TOOL_BINDING.kind:
            _run(reconcile_tool, TOOL_BINDING.kind, namespace, ref["name"])
            agent = body.get("metadata", {}).get("labels", {}).get(AGENT_LABEL)
            if agent:
                _run(reconcile_agent, AGENT_DEPLOYMENT.kind, namespace, agent)
        elif ref.get("kind") == EVAL_SCHEDULE.kind:
            _run(reconcile_eval, EVAL_SCHEDULE.kind, namespace, ref["name"])


for _group, _version, _plural in CHILD_RESOURCES:
    kopf.on.event(_group, _version, _plural, labels=MANAGED, id=f"child-{_plural}")(child_event)


def _bindings_of(namespace: str, agent: str) -> list[str]:
    return [
        b["metadata"]["name"]
        for b in _ctx().kube.list(TOOL_BINDING, namespace)
        if (b.get("spec") or {}).get("agentRef", {}).get("name") == agent
    ]


__all__ = [
    "agent_event",
    "binding_event",
    "child_event",
    "eval_event",
    "login",
    "resync_once",
    "settings_from_env",
]
