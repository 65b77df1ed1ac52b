"""What the watches have seen: the keys of every sleuth object, who names which agent, the
AgentDeployments and ToolBindings themselves (the ToolBindings indexed by the agent they name),
and a fingerprint, the labels, the owners and (Deployments) the rollout of every managed child.

kopf's event handlers feed it (:meth:`WatchCache.seen_object`, :meth:`WatchCache.seen_child`,
:meth:`WatchCache.keep`); the handlers read the agent → ToolBindings and agent → EvalSchedules maps
from it instead of listing on every event, the resync enqueues its keys,
:mod:`sleuth.operator.loop.applier` compares a child's fingerprint with the one it last applied
before writing, and serves the reconcilers' lists of ToolBindings from it once a real list has
filled it (:meth:`WatchCache.relisted`, at start and at every resync, which also drops what a missed
DELETED event left behind; the resync's list of each child kind's names does the same for the
children, :meth:`WatchCache.relisted_children`). The reconcilers' lists of their own children (what
they prune) are served from the children's labels and owners too (:meth:`WatchCache.owned`): a child
the watch has not reported yet is not pruned now, but its event then wakes its owner, whose next
reconcile prunes it. Thread-safe: the event loop writes, worker threads read.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from sleuth.core.kube import Resource
from sleuth.operator.loop.rollout import Rollout, rollout
from sleuth.operator.loop.selector import matches

Key = tuple[str, str, str]  # (kind, namespace, name)
ChildKey = tuple[str, str, str, str]  # (apiVersion, kind, namespace, name)

# Written by the apiserver on every write or by controllers beside the content: not compared.
_VOLATILE_META = ("resourceVersion", "managedFields", "generation")


def fingerprint(obj: dict[str, Any]) -> str:
    """A digest of an object's content: everything but its status and the bookkeeping fields
    the apiserver rewrites on every write."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _VOLATILE_META}
    content = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
    content["metadata"] = meta
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def child_key(obj: dict[str, Any]) -> ChildKey:
    meta = obj["metadata"]
    return (str(obj["apiVersion"]), str(obj["kind"]), str(meta["namespace"]), str(meta["name"]))


@dataclass(frozen=True)
class SeenChild:
    """A managed child as its watch last reported it: what pruning and the applier read."""

    fingerprint: str
    uid: str
    labels: dict[str, str]
    owners: tuple[str, ...]  # uids of its ownerReferences
    view: dict[str, Any] | None = None  # a Deployment's generation, replicas, strategy, status
    version: int | None = None  # its resourceVersion

    def stub(self, namespace: str, name: str) -> dict[str, Any]:
        """The child as a list item carrying only what :func:`prune` reads."""
        return {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": self.uid,
                "labels": dict(self.labels),
                "ownerReferences": [{"uid": uid} for uid in self.owners],
            }
        }


@dataclass(frozen=True)
class Change:
    """What a child's watch event changed for the objects that read the child.

    ``owner``: anything its owner's reconcile reads of it (content, labels, owners, or a
    Deployment's rollout as :func:`~sleuth.operator.loop.rollout.rollout` reads it) — or it appeared
    or went. ``serving``: a Deployment started or stopped serving (or appeared or went), the one
    thing an AgentDeployment reads of its tools' Deployments. An event that changes neither (a
    condition's timestamp, ``readyReplicas`` ahead of ``availableReplicas``) wakes nobody."""

    owner: bool
    serving: bool


def _rollout_of(seen: SeenChild | None) -> Rollout | None:
    if seen is None or seen.view is None:
        return None
    return rollout(str(seen.view["metadata"].get("name") or ""), seen.view)


def rollout_view(deployment: dict[str, Any]) -> dict[str, Any]:
    """The part of a Deployment its rollout is read from
    (:func:`sleuth.operator.loop.rollout.rollout`): name, generation, replicas, strategy and
    status."""
    meta, spec = deployment.get("metadata") or {}, deployment.get("spec") or {}
    return {
        "metadata": {"name": meta.get("name"), "generation": meta.get("generation", 0)},
        "spec": {k: spec[k] for k in ("replicas", "strategy") if k in spec},
        "status": deployment.get("status") or {},
    }


@dataclass
class WatchCache:
    """Keys, references and child fingerprints, as the watches last reported them."""

    _objects: dict[str, dict[tuple[str, str], str | None]] = field(default_factory=dict)
    _naming: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    _children: dict[ChildKey, SeenChild] = field(default_factory=dict)
    _owned: dict[str, set[ChildKey]] = field(default_factory=dict)  # owner uid -> children
    _bodies: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    # (kind, namespace, agentRef.name) -> names of the kept bodies naming that agent
    _naming_bodies: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    _listed: dict[str, set[str | None]] = field(default_factory=dict)
    _gone: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    # (apiVersion, kind, scope) -> the (namespace, name) its last list held: what absent() reads
    _named: dict[tuple[str, str, str | None], set[tuple[str, str]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def seen_object(self, kind: str, namespace: str, name: str, agent: str | None) -> str | None:
        """Record a live sleuth object and the agent it names (None for an AgentDeployment);
        returns the agent it named before."""
        with self._lock:
            known = self._objects.setdefault(kind, {})
            before = known.get((namespace, name))
            known[(namespace, name)] = agent
            self._unlink(kind, namespace, name, before)
            if agent is not None:
                self._naming.setdefault((kind, namespace, agent), set()).add(name)
            return before

    def gone_object(self, kind: str, namespace: str, name: str) -> str | None:
        """Forget a deleted sleuth object; returns the agent it named."""
        with self._lock:
            before = self._objects.get(kind, {}).pop((namespace, name), None)
            self._unlink(kind, namespace, name, before)
            return before

    def _unlink(self, kind: str, namespace: str, name: str, agent: str | None) -> None:
        if agent is None:
            return
        names = self._naming.get((kind, namespace, agent))
        if names is not None:
            names.discard(name)
            if not names:
                del self._naming[(kind, namespace, agent)]

    def has(self, kind: str, namespace: str, name: str) -> bool:
        with self._lock:
            return (namespace, name) in self._objects.get(kind, {})

    def naming(self, kind: str, namespace: str, agent: str) -> list[str]:
        """Names of the ``kind`` objects in ``namespace`` whose agentRef is ``agent``."""
        with self._lock:
            return sorted(self._naming.get((kind, namespace, agent), ()))

    def keys(self) -> list[Key]:
        """Every sleuth object seen and not deleted."""
        with self._lock:
            return [
                (kind, ns, name) for kind, known in self._objects.items() for (ns, name) in known
            ]

    def keep(self, kind: str, body: dict[str, Any], deleted: bool) -> None:
        """Record (or, deleted, drop) the body of an object whose lists the cache serves."""
        meta = body["metadata"]
        key = (str(meta["namespace"]), str(meta["name"]))
        with self._lock:
            known = self._bodies.setdefault(kind, {})
            if deleted:
                self._drop_body(kind, key)
                self._gone[(kind, *key)] = body  # a list taken before must not bring it back
            elif _newer(body, known.get(key)):
                self._put_body(kind, key, body)
                self._gone.pop((kind, *key), None)

    def _put_body(self, kind: str, key: tuple[str, str], body: dict[str, Any]) -> None:
        self._drop_body(kind, key)
        self._bodies.setdefault(kind, {})[key] = body
        agent = _agent_ref(body)
        if agent is not None:
            self._naming_bodies.setdefault((kind, key[0], agent), set()).add(key[1])

    def _drop_body(self, kind: str, key: tuple[str, str]) -> None:
        body = self._bodies.get(kind, {}).pop(key, None)
        agent = None if body is None else _agent_ref(body)
        if agent is None:
            return
        names = self._naming_bodies.get((kind, key[0], agent))
        if names is not None:
            names.discard(key[1])
            if not names:
                del self._naming_bodies[(kind, key[0], agent)]

    def relisted(
        self, kind: str, scope: str | None, items: list[dict[str, Any]], version: str
    ) -> None:
        """Merge a real list of ``kind`` in ``scope`` (a namespace, None: all), taken at
        collection ``version``: what it lacks and no later event brought is gone."""
        listed = {(str(o["metadata"]["namespace"]), str(o["metadata"]["name"])): o for o in items}
        with self._lock:
            known = self._bodies.setdefault(kind, {})
            for key, body in list(known.items()):
                mine = scope is None or key[0] == scope
                if mine and key not in listed and not _later_than(body, version):
                    self._drop_body(kind, key)
            for key, body in listed.items():
                gone = self._gone.get((kind, *key))
                if gone is not None and _newer(gone, body):
                    continue
                if _newer(body, known.get(key)):
                    self._put_body(kind, key, body)
            for tomb in [t for t, body in self._gone.items() if t[0] == kind]:
                if not _later_than(self._gone[tomb], version):
                    del self._gone[tomb]  # this list no longer holds it: nothing to guard
            self._listed.setdefault(kind, set()).add(scope)

    def body(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The ``kind`` object as last watched (or written by this process); None when not
        kept."""
        with self._lock:
            return self._bodies.get(kind, {}).get((namespace, name))

    def bodies(
        self, kind: str, namespace: str, agent: str | None = None
    ) -> list[dict[str, Any]] | None:
        """The ``kind`` objects of ``namespace`` (with ``agent``: only those whose
        ``spec.agentRef.name`` it is, from an index); None until a real list covered it."""
        with self._lock:
            scopes = self._listed.get(kind, set())
            if None not in scopes and namespace not in scopes:
                return None
            known = self._bodies.get(kind, {})
            if agent is not None:
                names = self._naming_bodies.get((kind, namespace, agent), ())
                return [known[(namespace, n)] for n in sorted(names)]
            return [b for (ns, _), b in known.items() if ns == namespace]

    def seen_child(self, obj: dict[str, Any]) -> Change:
        """Record a child as its watch reported it (or as the response to this process's own
        write); what changed since the last report. A report older than the one held (a write's
        response that a later event overtook) changes nothing."""
        meta = obj.get("metadata") or {}
        seen = SeenChild(
            fingerprint=fingerprint(obj),
            uid=str(meta.get("uid", "")),
            labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
            owners=tuple(str(r.get("uid", "")) for r in meta.get("ownerReferences") or []),
            view=rollout_view(obj) if obj.get("kind") == "Deployment" else None,
            version=_version(obj),
        )
        key = child_key(obj)
        with self._lock:
            before = self._children.get(key)
            if before is not None and _older(seen.version, before.version):
                return Change(owner=False, serving=False)
            self._unown(key)
            self._children[key] = seen
            for owner in seen.owners:
                self._owned.setdefault(owner, set()).add(key)
        if before is None:
            return Change(owner=True, serving=True)
        was, now = _rollout_of(before), _rollout_of(seen)
        same = (before.fingerprint, before.labels, before.owners) == (
            seen.fingerprint,
            seen.labels,
            seen.owners,
        )
        return Change(
            owner=not same or was != now,
            serving=(was is not None and was.ready) != (now is not None and now.ready),
        )

    def relisted_children(
        self,
        resource: Resource,
        scope: str | None,
        listed: set[tuple[str, str]],
        version: str,
    ) -> list[ChildKey]:
        """Merge a real list of one child kind in ``scope`` (a namespace, None: all): the
        (namespace, name) it held at collection ``version``. A child it lacks that no later
        event reported was deleted without its watch saying so; it is forgotten (its owner's
        next reconcile reads it absent and applies it again) and returned. A list of a kind not
        served (``version`` "") changes nothing."""
        if not version.isdigit():
            return []
        at, gone = int(version), []
        with self._lock:
            self._named[(resource.api_version, resource.kind, scope)] = set(listed)
            for key, seen in list(self._children.items()):
                if key[0] != resource.api_version or key[1] != resource.kind:
                    continue
                if (scope is not None and key[2] != scope) or (key[2], key[3]) in listed:
                    continue
                if seen.version is not None and seen.version > at:
                    continue  # reported after the list was taken
                self._unown(key)
                del self._children[key]
                gone.append(key)
        return gone

    def absent(self, key: ChildKey) -> bool:
        """Whether a child is known not to exist: no watch has reported it and the last list of
        its kind covering its namespace did not hold it (False when no list covered it)."""
        api_version, kind, namespace, name = key
        with self._lock:
            if key in self._children:
                return False
            for scope in (namespace, None):
                listed = self._named.get((api_version, kind, scope))
                if listed is not None:
                    return (namespace, name) not in listed
        return False

    def gone_child(self, obj: dict[str, Any]) -> None:
        self.forget_child(child_key(obj))

    def forget_child(self, key: ChildKey) -> None:
        with self._lock:
            self._unown(key)
            self._children.pop(key, None)

    def _unown(self, key: ChildKey) -> None:
        before = self._children.get(key)
        for owner in before.owners if before is not None else ():
            keys = self._owned.get(owner)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._owned[owner]

    def child(self, key: ChildKey) -> str | None:
        """The fingerprint of a child as last watched; None when unknown or deleted."""
        with self._lock:
            seen = self._children.get(key)
        return None if seen is None else seen.fingerprint

    def view(self, key: ChildKey) -> dict[str, Any] | None:
        """What the watch last reported of a Deployment's rollout (None when unknown)."""
        with self._lock:
            seen = self._children.get(key)
        return None if seen is None else seen.view

    def owned(
        self, owner_uid: str, api_version: str, kind: str, namespace: str, selector: str
    ) -> list[dict[str, Any]] | None:
        """The watched children of ``owner_uid`` of one kind in ``namespace`` that ``selector``
        selects, as list items holding name, uid, labels and owner uids; None for a selector it
        cannot read."""
        with self._lock:
            found = [
                (key[3], self._children[key])
                for key in self._owned.get(owner_uid, ())
                if key[0] == api_version and key[1] == kind and key[2] == namespace
            ]
        out = []
        for name, seen in sorted(found, key=lambda item: item[0]):
            selected = matches(selector, seen.labels)
            if selected is None:
                return None
            if selected:
                out.append(seen.stub(namespace, name))
        return out


def _agent_ref(body: dict[str, Any]) -> str | None:
    name = ((body.get("spec") or {}).get("agentRef") or {}).get("name")
    return str(name) if name else None


def _version(body: dict[str, Any] | None) -> int | None:
    text = str(((body or {}).get("metadata") or {}).get("resourceVersion", ""))
    return int(text) if text.isdigit() else None


def _older(version: int | None, than: int | None) -> bool:
    return version is not None and than is not None and version < than


def _newer(body: dict[str, Any], than: dict[str, Any] | None) -> bool:
    """Whether ``body`` is at least as recent as ``than`` (unknown versions: yes)."""
    mine, theirs = _version(body), _version(than)
    return mine is None or theirs is None or mine >= theirs


def _later_than(body: dict[str, Any], version: str) -> bool:
    """Whether an event brought ``body`` after a list at collection ``version``."""
    mine = _version(body)
    return mine is not None and version.isdigit() and mine > int(version)


__all__ = [
    "Change",
    "ChildKey",
    "Key",
    "SeenChild",
    "WatchCache",
    "child_key",
    "fingerprint",
    "rollout_view",
]
