"""The operator's API client: skips applies that would change nothing, and counts its writes.

:class:`OperatorKube` is a :class:`~sleuth.core.kube.Kube` whose :meth:`~OperatorKube.apply`
first compares the desired child with what is there, so that a converged operator sends no
write at all:

1. The child's fingerprint from the watch (:class:`~sleuth.operator.loop.watchcache.WatchCache`)
   equals the one recorded when this process last applied the same desired manifest: nothing
   changed since, skip (no request).
2. Otherwise (first time since start, or the child changed, or no watch reported it) the
   live child is read; when every field of the desired manifest has that value in it (fields
   other managers added are not the operator's), skip and record it. A child known to be
   absent — not in the list of its kind taken at start (or at the last resync) and not
   reported by its watch since — is not read: creating the children of 1,000 new agents
   costs one request each, as for a bare client.
3. Otherwise apply, record the fingerprint of what the apiserver returned, and hand that
   response to the watch cache as the child's latest report: the next reconcile neither reads
   the child nor (for a Deployment) its rollout, and the write's own event, when it comes,
   changes nothing there and wakes nobody.

A deleted child has no fingerprint and is absent when read, so it is applied again.

**Only what the owner controls.** The apply is forced (the operator's fields win over other
managers'), so before it writes over an existing object the applier checks that the object names
the manifest's owner as its controller (an ownerReference with ``controller: true`` and the
owner's uid); otherwise it raises :class:`~sleuth.operator.loop.errors.ChildConflict` and writes
nothing. The watches and lists select our label, so "known absent" says nothing about an object
someone else made with the same name: the first write of a child believed absent is an apply that
may only create (it carries a ``resourceVersion`` no live object has, which makes the apiserver
refuse it with a conflict when the name is taken), then the object found is checked.

The children an owner may prune come from the watch cache too (:meth:`OperatorKube.owned`), and
so do the Deployments' rollouts its status reports (:meth:`OperatorKube.observed`): a converged
reconcile lists nothing and reads no child.

Lists of ToolBindings (every reconcile reads its namespace's) are served from the watch cache
once a real list filled it (:meth:`OperatorKube.list_at`, at start and at each resync), and so
are the AgentDeployments and ToolBindings the reconcilers read (:meth:`OperatorKube.get`): the
cache holds each as its watch last reported it or, newer, as the response to this process's last
status write, so that a reconcile computes its status patch against what it wrote. Every write
the reconcilers make goes through here and is counted in ``sleuth_operator_writes_total{verb}``
(:mod:`sleuth.operator.loop.metrics`), skipped applies in ``sleuth_operator_applies_skipped_total``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

from sleuth.core.errors import KubeConflict, KubeRetryable
from sleuth.core.kube import AGENT_DEPLOYMENT, DEPLOYMENT, TOOL_BINDING, Kube, Resource, resource_of
from sleuth.operator.loop.errors import ChildConflict
from sleuth.operator.loop.metrics import OperatorMetrics
from sleuth.operator.loop.watchcache import ChildKey, WatchCache, child_key, fingerprint

log = logging.getLogger("sleuth.operator")

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PAGE = 250  # objects per page of a real list
BODIES_KEPT = frozenset({AGENT_DEPLOYMENT.kind, TOOL_BINDING.kind})
"""The kinds whose objects the watch cache holds whole: every reconcile reads them from it."""


def covers(desired: Any, live: Any) -> bool:
    """Whether ``live`` holds every field of ``desired`` with the same value (dicts may hold
    more keys; lists must match entry by entry)."""
    return difference(desired, live) is None


def difference(desired: Any, live: Any, path: str = "") -> str | None:
    """The first field of ``desired`` that ``live`` lacks or holds otherwise (None: covered)."""
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return path or "."
        for key, value in desired.items():
            if key not in live:
                return f"{path}.{key}"
            found = difference(value, live[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(desired, list):
        if not isinstance(live, list) or len(desired) != len(live):
            return path
        for index, (d, v) in enumerate(zip(desired, live, strict=True)):
            found = difference(d, v, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if isinstance(desired, bool) or isinstance(live, bool):
        return None if desired is live else path
    if isinstance(desired, int) and isinstance(live, str):  # a quantity (gpu: 1) comes back "1"
        return None if str(desired) == live else path
    return None if desired == live else path


CREATE_ONLY_VERSION = "1"
"""The resourceVersion of an apply that may only create: no object of ours is at etcd's first
revision, so an existing one makes the apiserver answer 409 Conflict."""


CREATE_ONLY_REFUSED = "resourceVersion should not be set on objects to be created"
"""What the apiserver answers (HTTP 500) when a kind's create path refuses any resourceVersion
(seen for Services in some versions): that kind is then read before its first write."""


def controller_uid(obj: dict[str, Any]) -> str | None:
    """The uid of an object's controller ownerReference, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return None


def check_controlled(manifest: dict[str, Any], live: dict[str, Any]) -> None:
    """:class:`ChildConflict` unless ``live`` is controlled by the manifest's controller."""
    wanted = controller_uid(manifest)
    if wanted is None or controller_uid(live) == wanted:
        return
    refs = (live.get("metadata") or {}).get("ownerReferences") or []
    controller = next((r for r in refs if r.get("controller")), None)
    found = (
        f"its controller is {controller.get('kind')} {controller.get('name')}"
        if controller is not None
        else "it has no controller"
    )
    meta = manifest["metadata"]
    raise ChildConflict(manifest["kind"], meta["namespace"], meta["name"], found)


def manifest_digest(manifest: dict[str, Any]) -> str:
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class OperatorKube(Kube):
    """:class:`Kube` that skips unchanged applies (against ``cache``) and counts writes."""

    def __init__(
        self, api: Any, cache: WatchCache, metrics: OperatorMetrics, **kwargs: Any
    ) -> None:
        super().__init__(api, **kwargs)
        self.cache = cache
        self.metrics = metrics
        self._applied: dict[ChildKey, tuple[str, str]] = {}
        self._taken: set[ChildKey] = set()  # names a create-only apply found taken: read them
        self._no_create_only: set[str] = set()  # kinds whose create path refuses a version
        self._lock = threading.Lock()

    def list_at(
        self, resource: Resource, namespace: str | None
    ) -> tuple[list[dict[str, Any]], str]:
        """A real list (never the cache) in pages of :data:`PAGE` objects (one consistent
        snapshot), and the collection's resourceVersion."""
        items: list[dict[str, Any]] = []
        version = ""
        for found, at in self._pages(resource, namespace, None, "application/json"):
            items.extend(found)
            version = at
        return items, version

    def names_at(
        self, resource: Resource, namespace: str | None, label_selector: str
    ) -> tuple[set[tuple[str, str]], str]:
        """(namespace, name) of every object a real list selects, read from pages of metadata
        alone (PartialObjectMetadata, one page parsed at a time), and the collection's
        resourceVersion ("" when the kind is not served)."""
        names: set[tuple[str, str]] = set()
        version = ""
        for found, at in self._pages(resource, namespace, label_selector, METADATA_LIST):
            names.update(
                (str(o["metadata"].get("namespace", "")), o["metadata"]["name"]) for o in found
            )
            version = at
        return names, version

    def _pages(
        self, resource: Resource, namespace: str | None, label_selector: str | None, accept: str
    ) -> Iterator[tuple[list[dict[str, Any]], str]]:
        selector = [("labelSelector", label_selector)] if label_selector else []
        version, token = "", ""
        while True:
            query = selector + [("limit", str(PAGE))] + ([("continue", token)] if token else [])
            found = self._request("GET", resource.path(namespace), query=query, accept=accept)
            meta = (found or {}).get("metadata") or {}
            version = version or str(meta.get("resourceVersion", ""))
            yield (found or {}).get("items") or [], version  # (an empty metadata list: null)
            token = str(meta.get("continue") or "")
            if not token:
                return

    def get(
        self, resource: Resource, namespace: str, name: str, sub: str | None = None
    ) -> dict[str, Any] | None:
        """An AgentDeployment or ToolBinding as its watch last reported it, or as this process
        last wrote its status, whichever is newer (no request); one not held is read."""
        if sub is None and resource.kind in BODIES_KEPT:
            kept = self.cache.body(resource.kind, namespace, name)
            if kept is not None:
                return kept
        return super().get(resource, namespace, name, sub)

    def observed(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        """A Deployment's rollout as the watch last reported it, or as the response to this
        process's last write of it if that is newer (no request; the event of any later change
        wakes its owner again); anything else, or one not reported yet: read."""
        if resource == DEPLOYMENT:
            view = self.cache.view((resource.api_version, resource.kind, namespace, name))
            if view is not None:
                return view
        return super().observed(resource, namespace, name)

    def owned(
        self, resource: Resource, namespace: str, label_selector: str, owner_uid: str
    ) -> list[dict[str, Any]]:
        """An owner's children as the watch cache holds them (no request): a child not yet
        reported is pruned at the reconcile its event then causes."""
        found = self.cache.owned(
            owner_uid, resource.api_version, resource.kind, namespace, label_selector
        )
        if found is None:
            return super().owned(resource, namespace, label_selector, owner_uid)
        return found

    def list_naming(self, resource: Resource, namespace: str, agent: str) -> list[dict[str, Any]]:
        """ToolBindings from the watch cache's agent index once a real list filled it."""
        if resource == TOOL_BINDING:
            cached = self.cache.bodies(resource.kind, namespace, agent)
            if cached is not None:
                return cached
        return super().list_naming(resource, namespace, agent)

    def list(
        self, resource: Resource, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        if resource == TOOL_BINDING and namespace is not None and label_selector is None:
            cached = self.cache.bodies(resource.kind, namespace)
            if cached is not None:
                return cached
        return super().list(resource, namespace, label_selector)

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        key = child_key(manifest)
        wanted = manifest_digest(manifest)
        with self._lock:
            last = self._applied.get(key)
        seen = self.cache.child(key)
        if last is not None and seen is not None and last == (wanted, seen):
            self.metrics.skipped(key[1])
            return manifest
        with self._lock:
            taken = key in self._taken or key[1] in self._no_create_only
        if last is None and seen is None and not taken and self.cache.absent(key):
            # Not there with our label when its kind was last listed, not reported since: no
            # read, but an apply that may only create (the name may be someone else's).
            try:
                return self._write(key, wanted, manifest, "absent", create_only=True)
            except KubeConflict:
                with self._lock:  # the name is taken: from now on read it, see whose it is
                    self._taken.add(key)
            except KubeRetryable as err:
                if CREATE_ONLY_REFUSED not in str(err):
                    raise
                log.info("%s: creates refuse a resourceVersion; reading first", key[1])
                with self._lock:  # this kind's create path refuses it: read before writing
                    self._no_create_only.add(key[1])
        live = self.get(resource_of(manifest), key[2], key[3])
        if live is not None:
            check_controlled(manifest, live)
        differs = "absent" if live is None else difference(manifest, live)
        if live is not None and differs is None:
            self._remember(key, wanted, live)
            self.metrics.skipped(key[1])
            return live
        return self._write(key, wanted, manifest, differs)

    def _write(
        self,
        key: ChildKey,
        wanted: str,
        manifest: dict[str, Any],
        differs: str | None,
        create_only: bool = False,
    ) -> dict[str, Any]:
        log.info("apply %s %s/%s: %s differs", key[1], key[2], key[3], differs)
        self.metrics.wrote("apply", key[1])
        if create_only:
            meta = {**manifest["metadata"], "resourceVersion": CREATE_ONLY_VERSION}
            result = super().apply({**manifest, "metadata": meta})
        else:
            result = super().apply(manifest)
        self._remember(key, wanted, result)
        self.cache.seen_child(result)  # its event, which wakes nobody, may come after the next read
        return result

    def _remember(self, key: ChildKey, wanted: str, obj: dict[str, Any]) -> None:
        with self._lock:
            self._applied[key] = (wanted, fingerprint(obj))

    def _forget(self, key: ChildKey) -> None:
        with self._lock:
            self._applied.pop(key, None)

    def merge_patch(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        self._forget(child_key(manifest))
        self.metrics.wrote("merge_patch", manifest["kind"])
        return super().merge_patch(manifest)

    def delete(self, resource: Resource, namespace: str, name: str, uid: str | None = None) -> None:
        key = (resource.api_version, resource.kind, namespace, name)
        self._forget(key)
        self.metrics.wrote("delete", resource.kind)
        super().delete(resource, namespace, name, uid)
        self.cache.forget_child(key)  # gone (or never there: a DELETED event the watch missed)

    def patch_status(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> dict[str, Any] | None:
        self.metrics.wrote("patch_status", resource.kind)
        written = super().patch_status(resource, namespace, name, status, resource_version)
        if written is not None and resource.kind in BODIES_KEPT:
            self.cache.keep(resource.kind, written, deleted=False)  # before its event comes
        return written

    def create(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        self.metrics.wrote("create", manifest["kind"])
        return super().create(manifest)

    def replace(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        self._forget(child_key(manifest))
        self.metrics.wrote("replace", manifest["kind"])
        return super().replace(manifest)


__all__ = [
    "CREATE_ONLY_VERSION",
    "OperatorKube",
    "check_controlled",
    "controller_uid",
    "covers",
    "difference",
    "manifest_digest",
]
