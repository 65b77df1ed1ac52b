"""What both reconcilers share: context, spec parsing, Secret checks, pruning, status and events."""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sleuth.api.v1alpha1.common import API_VERSION, SecretKeyRef
from sleuth.operator.errors import InvalidSpec, OperatorError
from sleuth.operator.kube import SECRET, Kube, Resource
from sleuth.operator.render.meta import MANAGED_BY, Owner, RenderSettings
from sleuth.operator.status import Cond, now_rfc3339, settle, status_patch, transitions

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


def secret_problems(kube: Kube, namespace: str, refs: list[tuple[str, SecretKeyRef]]) -> list[str]:
    """One message per referenced Secret key that is missing, naming the spec field."""
    problems = []
    cache: dict[str, dict[str, Any] | None] = {}
    for path, ref in refs:
        if ref.name not in cache:
            cache[ref.name] = kube.get(SECRET, namespace, ref.name)
        secret = cache[ref.name]
        if secret is None:
            problems.append(f"{path}: Secret {ref.name} not found")
        elif ref.key not in (secret.get("data") or {}) and ref.key not in (
            secret.get("stringData") or {}
        ):
            problems.append(f"{path}: Secret {ref.name} has no key {ref.key}")
    return problems


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
        for obj in kube.list(resource, owner.namespace, f"{selector},{MANAGED_LABEL}"):
            meta = obj["metadata"]
            owned = any(r.get("uid") == owner.uid for r in meta.get("ownerReferences") or [])
            if owned and (resource.kind, meta["name"]) not in keep:
                kube.delete(resource, owner.namespace, meta["name"], uid=meta.get("uid"))
                removed.append(f"{resource.kind}/{meta['name']}")
    return removed


MANAGED_LABEL = f"app.kubernetes.io/managed-by={MANAGED_BY}"


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
    except OperatorError as err:  # events are best effort
        log.warning("could not post event %s on %s: %s", reason, meta["name"], err)


def write_status(
    ctx: Context,
    resource: Resource,
    obj: dict[str, Any],
    conditions: list[Cond],
    extra: dict[str, Any],
    managed: tuple[str, ...],
) -> dict[str, Any]:
    """Settle conditions, write the status if it changed, post an Event per transition."""
    meta = obj["metadata"]
    generation = int(meta.get("generation", 0))
    current = obj.get("status") or {}
    settled = settle(current.get("conditions"), conditions, generation, ctx.now())
    desired = {"observedGeneration": generation, "conditions": settled, **extra}
    desired = {k: v for k, v in desired.items() if v is not None}
    patch = status_patch(current, desired, ("observedGeneration", "conditions", *managed))
    if patch is not None:
        ctx.kube.patch_status(resource, meta["namespace"], meta["name"], patch)
        for cond in transitions(current.get("conditions"), settled):
            healthy = (cond["type"] == "Degraded") == (cond["status"] == "False")
            emit(
                ctx,
                obj,
                "Normal" if healthy or cond["type"] == "Progressing" else "Warning",
                cond["reason"],
                f"{cond['type']}={cond['status']}: {cond['message']}",
            )
    return desired


__all__ = [
    "MANAGED_LABEL",
    "Context",
    "emit",
    "owner_of",
    "parse_spec",
    "prune",
    "secret_problems",
    "write_status",
]
