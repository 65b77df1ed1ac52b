"""kopf handlers, kept thin: each one wakes the level-based reconcile of what it concerns.

Watch events (ADDED/MODIFIED, and the initial listing when the operator starts: create, update
and resume alike) and a per-object timer run the same reconcile. Events of managed children
(Deployments, Services, ConfigMaps, NetworkPolicies) wake their owner, so a deleted or edited
child is put back at once and readiness is reported as soon as pods become ready.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

import kopf

from sleuth.operator.errors import PermanentError, RetryableError
from sleuth.operator.kube import Kube, new_api_client
from sleuth.operator.reconcile_agent import reconcile_agent
from sleuth.operator.reconcile_common import Context
from sleuth.operator.reconcile_tool import reconcile_tool
from sleuth.operator.render.meta import AGENT_LABEL, MANAGED_BY, RenderSettings

log = logging.getLogger("sleuth.operator")

GROUP, VERSION = "sleuth.dev", "v1alpha1"
RESYNC_SECONDS = float(os.environ.get("SLEUTH_RESYNC_SECONDS", "30"))
MANAGED = {"app.kubernetes.io/managed-by": MANAGED_BY}
CHILD_RESOURCES = [
    ("apps", "v1", "deployments"),
    ("", "v1", "services"),
    ("", "v1", "configmaps"),
    ("networking.k8s.io", "v1", "networkpolicies"),
]

Reconcile = Callable[[Context, str, str], Any]

_context: list[Context] = []
_locks: dict[tuple[str, str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def _ctx() -> Context:
    if not _context:
        api = new_api_client(os.environ.get("KUBECONFIG"))
        image = os.environ.get("SLEUTH_IMAGE")
        settings = RenderSettings(sleuth_image=image) if image else RenderSettings()
        _context.append(Context(kube=Kube(api), settings=settings))
    return _context[0]


def _run(fn: Reconcile, kind: str, namespace: str, name: str) -> None:
    """Run one reconcile, one at a time per object, applying the error policy."""
    with _locks_guard:
        lock = _locks.setdefault((kind, namespace, name), threading.Lock())
    with lock:
        try:
            fn(_ctx(), namespace, name)
        except RetryableError as err:
            raise kopf.TemporaryError(f"{kind} {namespace}/{name}: {err}", delay=5) from err
        except PermanentError as err:
            # Not retried on events; the timer tries again, quietly, at its interval.
            log.error("%s %s/%s: %s", kind, namespace, name, err)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.level = logging.WARNING  # our Events are the transitions, not kopf's logs
    settings.watching.server_timeout = 120
    settings.watching.client_timeout = 150
    _ctx()


@kopf.on.event(GROUP, VERSION, "agentdeployments")
def agent_event(type: str, namespace: str | None, name: str, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    if type == "DELETED":
        for binding in _bindings_of(namespace, name):
            _run(reconcile_tool, "ToolBinding", namespace, binding)
        return
    _run(reconcile_agent, "AgentDeployment", namespace, name)


@kopf.timer(GROUP, VERSION, "agentdeployments", interval=RESYNC_SECONDS, idle=0)
def agent_timer(namespace: str | None, name: str, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    _run(reconcile_agent, "AgentDeployment", namespace, name)


@kopf.on.event(GROUP, VERSION, "toolbindings")
def binding_event(type: str, namespace: str | None, name: str, body: kopf.Body, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    if type != "DELETED":
        _run(reconcile_tool, "ToolBinding", namespace, name)
    agent = (body.get("spec") or {}).get("agentRef", {}).get("name")
    if agent:
        _run(reconcile_agent, "AgentDeployment", namespace, agent)


@kopf.timer(GROUP, VERSION, "toolbindings", interval=RESYNC_SECONDS, idle=0)
def binding_timer(namespace: str | None, name: str, **_: Any) -> None:
    assert namespace is not None, "sleuth kinds are namespaced"
    _run(reconcile_tool, "ToolBinding", namespace, name)


def child_event(namespace: str | None, body: kopf.Body, **_: Any) -> None:
    """A managed child changed or vanished: converge its owner (and the owner's agent)."""
    if namespace is None:
        return
    for ref in body.get("metadata", {}).get("ownerReferences") or []:
        if not ref.get("controller") or not str(ref.get("apiVersion", "")).startswith(GROUP):
            continue
        if ref.get("kind") == "AgentDeployment":
            _run(reconcile_agent, "AgentDeployment", namespace, ref["name"])
        elif ref.get("kind") == "ToolBinding":
            _run(reconcile_tool, "ToolBinding", namespace, ref["name"])
            agent = body.get("metadata", {}).get("labels", {}).get(AGENT_LABEL)
            if agent:
                _run(reconcile_agent, "AgentDeployment", namespace, agent)


for _group, _version, _plural in CHILD_RESOURCES:
    kopf.on.event(_group, _version, _plural, labels=MANAGED, id=f"child-{_plural}")(child_event)


def _bindings_of(namespace: str, agent: str) -> list[str]:
    from sleuth.operator.kube import TOOL_BINDING

    return [
        b["metadata"]["name"]
        for b in _ctx().kube.list(TOOL_BINDING, namespace)
        if (b.get("spec") or {}).get("agentRef", {}).get("name") == agent
    ]


__all__ = ["agent_event", "agent_timer", "binding_event", "binding_timer", "child_event"]
