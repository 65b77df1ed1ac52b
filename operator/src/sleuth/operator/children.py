"""Applying a resource's children, and turning what the apiserver refuses into conditions.

Every child is applied in the renderer's order; a child the apiserver refuses for good
(:class:`~sleuth.core.errors.KubeRejected`: invalid, forbidden by a policy, too large) is recorded
and the others are still applied, except a workload that mounts a ConfigMap refused in the same
pass (its pods would start on the old configuration under the new hash). The owner then reports
``Ready=False`` / ``Degraded=True`` with reason ``ChildRejected`` and a message naming each child
and the apiserver's words; :func:`~sleuth.operator.reconcile_common.write_status` posts the
Warning Event. Retryable errors propagate, for the control loop to back off and try again; one
that lasts until someone acts (:class:`~sleuth.core.errors.KubeExhausted`: a full Service IP
range) is reported the same way first, then raised (:func:`retry_exhausted`).

**No takeover.** A child is applied only over an object this owner controls, or none
(:class:`~sleuth.operator.applier.OperatorKube` checks it before it writes): an object with the
child's name that is not the owner's raises :class:`~sleuth.operator.errors.ChildConflict`, is
left untouched, and the owner reports ``ChildConflict`` naming it. Workloads (Deployments,
CronJobs) are applied after everything else, and not at all once a child conflicted: a pod never
starts beside a foreign ConfigMap, NetworkPolicy or Service account that carries our name. After
a conflict, no later child of the pass is applied either (a RoleBinding would otherwise bind
our Role to a foreign ServiceAccount).

Drift the operator cannot undo with an apply: another field manager's list entry merged with
ours into an invalid object (a Service port edited by hand leaves two ports named ``http``, and
every apply fails with ``Duplicate value``). The operator controls the child, so on an
``Invalid`` refusal of an existing child it owns, it merge-patches its manifest once (lists
replaced whole, the foreign entry gone) and applies again; when that fails too, the first
refusal is reported.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from sleuth.core.errors import KubeExhausted, KubeRejected
from sleuth.core.kube import Kube, resource_of
from sleuth.operator.errors import ChildConflict
from sleuth.operator.render.meta import Manifest
from sleuth.operator.status import Cond

log = logging.getLogger("sleuth.operator")

CHILD_REJECTED = "ChildRejected"
CHILD_CONFLICT = "ChildConflict"
WORKLOADS = frozenset({"Deployment", "CronJob", "Job", "StatefulSet", "DaemonSet"})
MAX_MESSAGE_CHARS = 1024


@dataclass(frozen=True)
class Refusal:
    """A child the apiserver refused: which one, the Status reason and code, its message."""

    kind: str
    name: str
    message: str
    reason: str = ""
    status: int = 0
    error: KubeExhausted | None = None  # set when retrying may succeed (a full IP range)

    def describe(self) -> str:
        retry = " (retried)" if self.error is not None else ""
        return f"{self.kind} {self.name}: {self.message[:MAX_MESSAGE_CHARS]}{retry}"


def apply_children(kube: Kube, manifests: list[Manifest]) -> list[Refusal]:
    """Apply ``manifests`` in order, workloads last; return the refusals (the rest is applied,
    unless a child conflicted: then nothing after it)."""
    refused: list[Refusal] = []
    ordered = [m for m in manifests if m["kind"] not in WORKLOADS] + [
        m for m in manifests if m["kind"] in WORKLOADS
    ]
    for manifest in ordered:
        kind, name = manifest["kind"], manifest["metadata"]["name"]
        conflict = next((r for r in refused if r.reason == CHILD_CONFLICT), None)
        if conflict is not None:
            message = f"not applied: {conflict.kind} {conflict.name} is not this resource's"
            refused.append(Refusal(kind, name, message))
            continue
        mounts = mounted_config_maps(manifest)
        blocked = [r.name for r in refused if r.kind == "ConfigMap" and r.name in mounts]
        if blocked:
            message = f"not applied: it mounts ConfigMap {blocked[0]}, which was refused"
            refused.append(Refusal(kind, name, message))
            continue
        where = f"{kind} {manifest['metadata']['namespace']}/{name}"
        try:
            apply_owned(kube, manifest)
        except ChildConflict as err:
            log.warning("%s not applied: %s", where, err)
            refused.append(Refusal(kind, name, err.detail, CHILD_CONFLICT, CONFLICT))
        except KubeRejected as err:
            log.warning("%s refused: %s", where, err)
            refused.append(Refusal(kind, name, err.detail, err.reason, err.status))
        except KubeExhausted as err:
            log.warning(
                "%s %s/%s not applied: %s", kind, manifest["metadata"]["namespace"], name, err
            )
            detail = str(err).split(": ", 1)[-1]
            refused.append(Refusal(kind, name, detail, err.reason, error=err))
    return refused


CONFLICT = 409


def retry_exhausted(refused: list[Refusal]) -> None:
    """Raise the first retryable refusal (after the status saying so is written), so that the
    control loop backs off and tries again."""
    for refusal in refused:
        if refusal.error is not None:
            raise refusal.error


def apply_owned(kube: Kube, manifest: Manifest) -> dict[str, Any]:
    """Server-side apply ``manifest``; on an ``Invalid`` refusal of an existing child this
    owner controls, replace its lists with ours (merge patch) and apply again."""
    try:
        return kube.apply(manifest)
    except KubeRejected as err:
        if err.reason != "Invalid" or not _controlled(kube, manifest):
            raise
        meta = manifest["metadata"]
        try:
            patched = kube.merge_patch(manifest)
        except KubeRejected:
            patched = None
        if patched is None:
            raise err from None
        log.info(
            "%s %s/%s: replaced the lists another field manager changed (%s)",
            manifest["kind"],
            meta["namespace"],
            meta["name"],
            err.detail,
        )
        return kube.apply(manifest)


def _controlled(kube: Kube, manifest: Manifest) -> bool:
    """Whether the live child exists and names the manifest's controller as its own."""
    meta = manifest["metadata"]
    live = kube.get(resource_of(manifest), meta["namespace"], meta["name"])
    if live is None:
        return False
    wanted = {r["uid"] for r in meta.get("ownerReferences") or [] if r.get("controller")}
    refs = live.get("metadata", {}).get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") in wanted for r in refs)


def mounted_config_maps(node: Any) -> set[str]:
    """Names of the ConfigMaps a manifest's pod volumes mount."""
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("configMap")
        if isinstance(ref, dict) and isinstance(ref.get("name"), str):
            found.add(ref["name"])
        for value in node.values():
            found |= mounted_config_maps(value)
    elif isinstance(node, list):
        for item in node:
            found |= mounted_config_maps(item)
    return found


def rejected_conditions(refused: list[Refusal], conditions: list[Cond]) -> list[Cond]:
    """``conditions`` with Ready and Degraded replaced by ``ChildRejected`` when a child was
    refused (``ChildConflict`` when an object with a child's name is not the owner's);
    Progressing is kept."""
    if not refused:
        return conditions
    conflicts = [r for r in refused if r.reason == CHILD_CONFLICT]
    if conflicts:
        reason = CHILD_CONFLICT
        message = "; ".join(
            r.describe() for r in conflicts + [r for r in refused if r not in conflicts]
        )
    else:
        reason = CHILD_REJECTED
        message = "the apiserver refused " + "; ".join(r.describe() for r in refused)
    out = []
    for cond in conditions:
        if cond.type == "Ready":
            cond = Cond("Ready", "False", reason, message)
        elif cond.type == "Degraded":
            cond = Cond("Degraded", "True", reason, message)
        out.append(cond)
    return out


__all__ = [
    "CHILD_CONFLICT",
    "CHILD_REJECTED",
    "WORKLOADS",
    "Refusal",
    "apply_children",
    "apply_owned",
    "mounted_config_maps",
    "rejected_conditions",
    "retry_exhausted",
]
