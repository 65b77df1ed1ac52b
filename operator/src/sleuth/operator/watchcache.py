"""What the watches have seen: the keys of every sleuth object, who names which agent, the
ToolBindings themselves, and a fingerprint of every managed child.

kopf's event handlers feed it (:meth:`WatchCache.seen_object`, :meth:`WatchCache.seen_child`,
:meth:`WatchCache.keep`); the handlers read the agent → ToolBindings and agent → EvalSchedules
maps from it instead of listing on every event, the resync enqueues its keys,
:mod:`sleuth.operator.applier` compares a child's fingerprint with the one it last applied before
writing, and serves the reconcilers' lists of ToolBindings from it once a real list has filled it
(:meth:`WatchCache.relisted`, at start and at every resync, which also drops what a missed
DELETED event left behind). Thread-safe: the event loop writes, worker threads read.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

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


@dataclass
class WatchCache:
    """Keys, references and child fingerprints, as the watches last reported them."""

    _objects: dict[str, dict[tuple[str, str], str | None]] = field(default_factory=dict)
    _naming: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    _children: dict[ChildKey, str] = field(default_factory=dict)
    _bodies: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    _listed: dict[str, set[str | None]] = field(default_factory=dict)
    _gone: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
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
                known.pop(key, None)
                self._gone[(kind, *key)] = body  # a list taken before must not bring it back
            elif _newer(body, known.get(key)):
                known[key] = body
                self._gone.pop((kind, *key), None)

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
                    del known[key]
            for key, body in listed.items():
                gone = self._gone.get((kind, *key))
                if gone is not None and _newer(gone, body):
                    continue
                if _newer(body, known.get(key)):
                    known[key] = body
            for tomb in [t for t, body in self._gone.items() if t[0] == kind]:
                if not _later_than(self._gone[tomb], version):
                    del self._gone[tomb]  # this list no longer holds it: nothing to guard
            self._listed.setdefault(kind, set()).add(scope)

    def bodies(self, kind: str, namespace: str) -> list[dict[str, Any]] | None:
        """The ``kind`` objects of ``namespace``; None until a real list covered it."""
        with self._lock:
            scopes = self._listed.get(kind, set())
            if None not in scopes and namespace not in scopes:
                return None
            return [b for (ns, _), b in self._bodies.get(kind, {}).items() if ns == namespace]

    def seen_child(self, obj: dict[str, Any]) -> None:
        digest = fingerprint(obj)
        with self._lock:
            self._children[child_key(obj)] = digest

    def gone_child(self, obj: dict[str, Any]) -> None:
        with self._lock:
            self._children.pop(child_key(obj), None)

    def child(self, key: ChildKey) -> str | None:
        """The fingerprint of a child as last watched; None when unknown or deleted."""
        with self._lock:
            return self._children.get(key)


def _version(body: dict[str, Any] | None) -> int | None:
    text = str(((body or {}).get("metadata") or {}).get("resourceVersion", ""))
    return int(text) if text.isdigit() else None


def _newer(body: dict[str, Any], than: dict[str, Any] | None) -> bool:
    """Whether ``body`` is at least as recent as ``than`` (unknown versions: yes)."""
    mine, theirs = _version(body), _version(than)
    return mine is None or theirs is None or mine >= theirs


def _later_than(body: dict[str, Any], version: str) -> bool:
    """Whether an event brought ``body`` after a list at collection ``version``."""
    mine = _version(body)
    return mine is not None and version.isdigit() and mine > int(version)


__all__ = ["ChildKey", "Key", "WatchCache", "child_key", "fingerprint"]
