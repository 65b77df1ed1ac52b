"""What the reconcilers share: context, spec parsing, pruning, status and events (the Secret
checks are in :mod:`sleuth.operator.guard`)."""

from __future__ import annotations

import dataclasses
import logging
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sleuth.core.api.v1alpha1.common import API_VERSION
from sleuth.core.errors import SleuthError
from sleuth.core.kube import DEPLOYMENT, POD, Kube, Resource
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.loop.rollout import Rollout, rollout
from sleuth.operator.render.meta import (
    MANAGED_BY,
    Component,
    Owner,
    RenderSettings,
    selector_labels,
)
from sleuth.operator.status import (
    Cond,
    healthy,
    newsworthy,
    now_rfc3339,
    settle,
    status_patch,
    unschedulable,
)

log = logging.getLogger("sleuth.operator")

M = TypeVar("M", bound=BaseModel)


@dataclass
class Context:
    """Everything a reconcile needs besides the object's name."""

    kube: Kube
    settings: RenderSettings = field(default_factory=RenderSettings)
    now: Callable[[], str] = now_rfc3339
    instance: str = field(default_factory=socket.gethostname)


def owner_of(obj: dict[str, Any]) -> Owner:
    meta = obj["metadata"]
    return Owner(kind=obj["kind"], name=meta["name"], namespace=meta["namespace"], uid=meta["uid"])


def parse_spec(model: type[M], obj: dict[str, Any]) -> M:
    """Validate ``obj.spec``; :class:`InvalidSpec` names the first offending field."""
    try:
        return model.model_validate(obj.get("spec") or {})
    except ValidationError as err:
        first = err.errors()[0]
        path = "spec" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        named = _FIELD.match(message)
        if named:  # the model's own rules name the field first
            path = named.group(1)
        raise InvalidSpec(path, message) from err


_FIELD = re.compile(r"^(spec(?:\.[A-Za-z0-9_]+)+)")


def prune(
    kube: Kube,
    owner: Owner,
    resources: list[Resource],
    selector: str,
    keep: set[tuple[str, str]],
) -> list[str]:
    """Delete children of ``owner`` matching ``selector`` that are not in ``keep`` (kind, name)."""
    removed = []
    for resource in resources:
        for obj in kube.owned(resource, owner.namespace, f"{selector},{MANAGED_LABEL}", owner.uid):
            meta = obj["metadata"]
            if (resource.kind, meta["name"]) not in keep:
                kube.delete(resource, owner.namespace, meta["name"], uid=meta.get("uid"))
                removed.append(f"{resource.kind}/{meta['name']}")
    return removed


MANAGED_LABEL = f"app.kubernetes.io/managed-by={MANAGED_BY}"


def observe_rollout(
    kube: Kube, namespace: str, name: str, component: Component, instance: str
) -> Rollout:
    """The rollout of Deployment ``name``; while it is not complete, with the scheduler's reason
    when its pods (selected by ``component`` and ``instance``) cannot be placed. Its pods are
    not listed before the Deployment controller has observed its latest spec (a Deployment just
    created or changed): the event of that observation wakes the owner again."""
    found = rollout(name, kube.observed(DEPLOYMENT, namespace, name))
    if not found.exists or found.complete or not found.current_generation:
        return found
    labels = selector_labels(component, instance)
    selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    return dataclasses.replace(
        found, unschedulable=unschedulable(kube.list(POD, namespace, selector))
    )


def emit(ctx: Context, obj: dict[str, Any], kind: str, reason: str, message: str) -> None:
    """Post a core/v1 Event about ``obj``; failures are logged, never raised."""
    meta = obj["metadata"]
    now = ctx.now()
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": obj["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "type": kind,
        "reason": reason,
        "message": message[:1024],
        "source": {"component": "sleuth-operator"},
        "reportingComponent": "sleuth-operator",
        "reportingInstance": ctx.instance[:128],
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    try:
        ctx.kube.create(event)
    except SleuthError as err:  # events are best effort
        log.warning("could not post event %s on %s: %s", reason, meta["name"], err)


def write_status(
    ctx: Context,
    resource: Resource,
    obj: dict[str, Any],
    conditions: list[Cond],
    extra: dict[str, Any],
    managed: tuple[str, ...],
) -> dict[str, Any]:
    """Settle conditions, write the status if it changed, post an Event for each change that is
    news (:func:`~sleuth.operator.status.newsworthy`)."""
    meta = obj["metadata"]
    generation = int(meta.get("generation", 0))
    current = obj.get("status") or {}
    settled = settle(current.get("conditions"), conditions, generation, ctx.now())
    desired = {"observedGeneration": generation, "conditions": settled, **extra}
    desired = {k: v for k, v in desired.items() if v is not None}
    patch = status_patch(current, desired, ("observedGeneration", "conditions", *managed))
    if patch is not None:
        ctx.kube.patch_status(resource, meta["namespace"], meta["name"], patch)
        for cond in newsworthy(current.get("conditions"), settled):
            emit(
                ctx,
                obj,
                "Normal" if healthy(cond) else "Warning",
                cond["reason"],
                f"{cond['type']}={cond['status']}: {cond['message']}",
            )
    return desired


__all__ = [
    "MANAGED_LABEL",
    "Context",
    "emit",
    "observe_rollout",
    "owner_of",
    "parse_spec",
    "prune",
    "write_status",
]
