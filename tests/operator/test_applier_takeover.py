"""No takeover, without a cluster: the applier writes only over objects the manifest's owner
controls, and a child it believes absent is created by an apply that may only create. The same
against the real apiserver: tests/operator/test_cluster_guardrails.py."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sleuth.core.errors import KubeConflict, KubeRetryable
from sleuth.core.kube import SERVICE, SERVICE_ACCOUNT
from sleuth.operator.children import CHILD_CONFLICT, apply_children, rejected_conditions
from sleuth.operator.errors import ChildConflict
from sleuth.operator.loop.applier import CREATE_ONLY_REFUSED, CREATE_ONLY_VERSION
from sleuth.operator.loop.watchcache import WatchCache
from sleuth.operator.render.meta import Owner
from sleuth.operator.status import Cond
from tests.operator.applier_kit import InMemoryApi, Request

pytestmark = pytest.mark.unit

NS = "team-a"
OWNER = Owner(kind="EvalSchedule", name="weekly", namespace=NS, uid="uid-weekly")


class Apiserver(InMemoryApi):
    """Answers as the apiserver does: an apply whose resourceVersion differs from the live
    object's is a 409 Conflict."""

    def __init__(self, cache: WatchCache) -> None:
        super().__init__(cache, version=100)
        self.requests: list[tuple[str, str]] = []

    def answer(self, request: Request) -> dict[str, Any] | None:
        path = request.path
        self.requests.append((request.method, path.rsplit("/", 1)[-1]))
        if request.method == "GET":
            return self.read(path)
        assert request.method == "PATCH"
        live = self.store.get(path)
        wanted = request.body["metadata"].get("resourceVersion")
        if (
            live is not None
            and wanted is not None
            and wanted != live["metadata"]["resourceVersion"]
        ):
            raise KubeConflict(f"Operation cannot be fulfilled on {path}", reason="Conflict")
        obj = json.loads(json.dumps({**(live or {}), **request.body}))
        self.stamp(obj)
        obj["metadata"].setdefault("uid", "u-" + obj["metadata"]["name"])
        return self.keep(path, obj)

    def put(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.stamp(obj)
        self.store[SERVICE_ACCOUNT.path(meta["namespace"], meta["name"])] = obj


def account(name: str = "weekly-eval", owners: list[dict[str, Any]] | None = None) -> dict:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owners is not None:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}


def ours(name: str = "weekly-eval") -> dict[str, Any]:
    return account(name, [OWNER.reference()])


def listed_without(kube: Apiserver, cache: WatchCache) -> None:
    """The cache's list of ServiceAccounts (our label) held none: every name looks absent."""
    cache.relisted_children(SERVICE_ACCOUNT, NS, set(), "50")


def test_a_foreign_object_the_list_did_not_show_is_left_alone() -> None:
    cache = WatchCache()
    kube = Apiserver(cache)
    theirs = account(owners=[])
    theirs["metadata"]["labels"] = {"team": "payments"}
    kube.put(theirs)
    before = copy.deepcopy(theirs)
    listed_without(kube, cache)
    with pytest.raises(ChildConflict, match="it has no controller"):
        kube.apply(ours())
    assert kube.store[SERVICE_ACCOUNT.path(NS, "weekly-eval")] == before
    # One apply that may only create (refused), one read; the next attempt only reads.
    assert kube.requests == [("PATCH", "weekly-eval"), ("GET", "weekly-eval")]
    with pytest.raises(ChildConflict):
        kube.apply(ours())
    assert kube.requests[2:] == [("GET", "weekly-eval")]


def test_an_absent_child_is_created_by_one_create_only_apply() -> None:
    cache = WatchCache()
    kube = Apiserver(cache)
    listed_without(kube, cache)
    created = kube.apply(ours())
    assert kube.requests == [("PATCH", "weekly-eval")]
    assert created["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid
    assert created["metadata"]["resourceVersion"] != CREATE_ONLY_VERSION


def test_an_object_controlled_by_another_owner_is_left_alone() -> None:
    cache = WatchCache()
    kube = Apiserver(cache)
    other = Owner(kind="EvalSchedule", name="nightly", namespace=NS, uid="uid-nightly")
    kube.put(account(owners=[other.reference()]))
    with pytest.raises(ChildConflict, match="its controller is EvalSchedule nightly"):
        kube.apply(ours())
    assert [m for m, _ in kube.requests] == ["GET"]


def test_an_object_the_owner_controls_is_applied() -> None:
    cache = WatchCache()
    kube = Apiserver(cache)
    kube.put(ours())
    changed = ours()
    changed["metadata"]["labels"] = {"new": "label"}
    kube.apply(changed)
    assert [m for m, _ in kube.requests] == ["GET", "PATCH"]


def test_after_a_conflict_nothing_later_is_applied_and_the_owner_says_why() -> None:
    cache = WatchCache()
    kube = Apiserver(cache)
    kube.put(account(owners=[]))
    role_binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {
            "name": "weekly-eval",
            "namespace": NS,
            "ownerReferences": [OWNER.reference()],
        },
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "weekly-eval",
            "namespace": NS,
            "ownerReferences": [OWNER.reference()],
        },
    }
    refused = apply_children(kube, [job, ours(), role_binding])
    assert [(r.kind, r.reason) for r in refused] == [
        ("ServiceAccount", CHILD_CONFLICT),
        ("RoleBinding", ""),
        ("CronJob", ""),
    ]
    assert [m for m, _ in kube.requests] == ["GET"]  # nothing written
    healthy = [Cond("Ready", "True", "Scheduled"), Cond("Degraded", "False", "AsExpected")]
    ready, degraded = rejected_conditions(refused, healthy)
    assert (ready.status, ready.reason) == ("False", CHILD_CONFLICT)
    assert ready.message.startswith(
        "ServiceAccount weekly-eval: exists in team-a and is not controlled by this resource"
    )
    assert "RoleBinding weekly-eval: not applied" in ready.message
    assert degraded.reason == CHILD_CONFLICT


class OldServices(Apiserver):
    """An apiserver whose Service create path refuses any resourceVersion (HTTP 500)."""

    def answer(self, request: Request) -> dict[str, Any] | None:
        path = request.path
        refused = request.method == "PATCH" and "/services/" in path and path not in self.store
        if refused and request.body["metadata"].get("resourceVersion"):
            self.requests.append((request.method, path.rsplit("/", 1)[-1]))
            raise KubeRetryable(f"PATCH {path}: HTTP 500: {CREATE_ONLY_REFUSED}")
        return super().answer(request)


def test_a_kind_whose_creates_refuse_a_version_is_read_before_its_first_write() -> None:
    cache = WatchCache()
    kube = OldServices(cache)
    cache.relisted_children(SERVICE, NS, set(), "50")

    def service(name: str) -> dict[str, Any]:
        meta = {"name": name, "namespace": NS, "ownerReferences": [OWNER.reference()]}
        return {"apiVersion": "v1", "kind": "Service", "metadata": meta}

    kube.apply(service("one"))
    assert kube.requests == [("PATCH", "one"), ("GET", "one"), ("PATCH", "one")]
    kube.apply(service("two"))  # no create-only attempt any more for Services
    assert kube.requests[3:] == [("GET", "two"), ("PATCH", "two")]
