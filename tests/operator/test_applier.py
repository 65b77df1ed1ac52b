"""The applier and the watch cache without a cluster, against a recording fake of the
apiserver's HTTP layer: unchanged applies skipped, the ToolBinding cache, pruning and rollouts
read from the watched children."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from sleuth.core.kube import CONFIG_MAP, DEPLOYMENT, TOOL_BINDING
from sleuth.operator.loop.applier import covers
from sleuth.operator.loop.selector import matches
from sleuth.operator.loop.watchcache import WatchCache
from sleuth.operator.reconcile_common import prune
from sleuth.operator.render.meta import MANAGED_BY, Owner
from tests.operator.applier_kit import InMemoryApi, Request

pytestmark = pytest.mark.unit

NS = "team-a"


# -- the applier ---------------------------------------------------------------------------------


class FakeApi(InMemoryApi):
    """Records every request it would send; an apply stores the body as the live object."""

    def __init__(self, cache: WatchCache) -> None:
        super().__init__(cache)
        self.requests: list[str] = []
        self.accepted = ""  # the Accept header of the last request

    def answer(self, request: Request) -> dict[str, Any] | None:
        self.requests.append(request.method)
        self.accepted = request.accept
        if request.method == "GET":
            return self.read(request.path)
        if request.method == "DELETE":
            self.store.pop(request.path, None)
            return None
        assert request.method == "PATCH"
        assert request.content_type == "application/apply-patch+yaml"
        obj = json.loads(json.dumps(request.body))
        self.stamp(obj)
        obj["metadata"]["uid"] = "u-" + obj["metadata"]["name"]
        obj["status"] = {}
        return self.keep(request.path, obj)


def config_map(data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "agent", "namespace": NS, "labels": {"a": "b"}},
        "data": {"config": data},
    }


def test_the_applier_writes_only_what_differs() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    kube.apply(config_map("one"))
    assert kube.requests == ["GET", "PATCH"]  # absent: applied
    path = "/api/v1/namespaces/team-a/configmaps/agent"
    cache.seen_child(kube.store[path])  # the watch reports our write
    kube.requests.clear()
    kube.apply(config_map("one"))
    assert kube.requests == []  # unchanged and watched: no request at all
    live = kube.store[path]
    live["metadata"]["labels"]["added-by"] = "someone-else"
    live["status"] = {"x": 1}
    cache.seen_child(live)
    kube.apply(config_map("one"))
    assert kube.requests == ["GET"]  # changed, but not in what the operator owns: read only
    kube.requests.clear()
    kube.apply(config_map("two"))
    assert kube.requests == ["GET", "PATCH"]  # the desired state moved: written
    cache.seen_child(kube.store[path])
    kube.store[path]["data"]["config"] = "edited by hand"
    cache.seen_child(kube.store[path])
    kube.requests.clear()
    kube.apply(config_map("two"))
    assert kube.requests == ["GET", "PATCH"]  # a field it owns was edited: put back
    assert kube.store[path]["data"]["config"] == "two"
    cache.gone_child(kube.store.pop(path))
    kube.requests.clear()
    kube.apply(config_map("two"))
    assert kube.requests == ["GET", "PATCH"]  # deleted: put back
    assert kube.metrics.total_writes() == 4


def test_a_child_deleted_without_an_event_is_applied_again_after_the_resyncs_list() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    path = "/api/v1/namespaces/team-a/configmaps/agent"
    kube.apply(config_map("one"))
    cache.seen_child(kube.store[path])
    del kube.store[path]  # deleted while the watch was away: no DELETED event
    kube.requests.clear()
    kube.apply(config_map("one"))
    assert kube.requests == []  # the cache still vouches for it
    later = config_map("late") | {"metadata": {"name": "late", "namespace": NS, "uid": "u-l"}}
    later["metadata"]["resourceVersion"] = "9"  # reported after the list below was taken
    cache.seen_child(later)
    kube.store["/api/v1/namespaces/team-a/configmaps"] = {
        "metadata": {"resourceVersion": "5"},
        "items": [],
    }
    names, version = kube.names_at(CONFIG_MAP, NS, f"app.kubernetes.io/managed-by={MANAGED_BY}")
    assert kube.accepted.startswith("application/json;as=PartialObjectMetadataList")
    assert (names, version) == (set(), "5")
    assert cache.relisted_children(DEPLOYMENT, NS, names, version) == []  # another kind
    gone = cache.relisted_children(CONFIG_MAP, NS, names, version)
    assert gone == [("v1", "ConfigMap", NS, "agent")]  # "late" is newer than the list
    assert cache.child(("v1", "ConfigMap", NS, "late")) is not None
    kube.requests.clear()
    kube.apply(config_map("one"))
    assert kube.requests == ["GET", "PATCH"]  # read absent: put back
    assert path in kube.store
    assert cache.relisted_children(CONFIG_MAP, NS, set(), "") == []  # a kind not served


def test_a_child_its_kinds_list_did_not_hold_is_created_without_a_read() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    kube.apply(config_map("one"))
    assert kube.requests == ["GET", "PATCH"]  # no list of ConfigMaps yet: read first
    other = config_map("one") | {"metadata": {"name": "other", "namespace": NS}}
    cache.relisted_children(CONFIG_MAP, NS, {(NS, "agent")}, "3")
    kube.requests.clear()
    kube.apply(other)
    assert kube.requests == ["PATCH"]  # not listed, not watched: created without a read
    kube.requests.clear()
    kube.apply(other)
    assert kube.requests == []  # the response to its own write is held: nothing to read
    cache.forget_child(("v1", "ConfigMap", NS, "agent"))
    assert not cache.absent(("v1", "ConfigMap", NS, "agent"))  # it was listed: read it
    assert not cache.absent(("apps/v1", "Deployment", NS, "agent"))  # no list of that kind
    cache.relisted_children(CONFIG_MAP, None, set(), "4")  # a list of all namespaces
    assert cache.absent(("v1", "ConfigMap", "elsewhere", "x"))


def test_a_restarted_applier_reads_once_and_writes_nothing_when_converged() -> None:
    first = FakeApi(WatchCache())
    first.apply(config_map("one"))
    restarted = FakeApi(WatchCache())
    restarted.store = first.store
    restarted.apply(config_map("one"))
    assert restarted.requests == ["GET"]
    assert restarted.metrics.total_writes() == 0


def test_covers_compares_owned_fields_only() -> None:
    assert covers({"a": 1, "b": [{"c": "d"}]}, {"a": 1, "b": [{"c": "d", "e": 2}], "f": 3})
    assert not covers({"b": [{"c": "d"}]}, {"b": [{"c": "d"}, {"c": "x"}]})
    assert covers({"gpu": 1}, {"gpu": "1"})  # the apiserver returns quantities as strings
    assert not covers({"gpu": 2}, {"gpu": "1"})
    assert not covers({"a": "1"}, {"a": 1})
    assert not covers({"a": True}, {"a": 1})
    assert not covers({"a": 1}, {})


# -- the ToolBinding cache -----------------------------------------------------------------------


def binding(name: str, version: int, namespace: str = NS) -> dict[str, Any]:
    return {
        "kind": "ToolBinding",
        "metadata": {"namespace": namespace, "name": name, "resourceVersion": str(version)},
        "spec": {"agentRef": {"name": "contracts"}},
    }


def names(cache: WatchCache, namespace: str = NS) -> list[str] | None:
    found = cache.bodies("ToolBinding", namespace)
    return None if found is None else sorted(b["metadata"]["name"] for b in found)


def test_bindings_are_served_only_after_a_real_list_and_follow_the_events() -> None:
    cache = WatchCache()
    cache.keep("ToolBinding", binding("a", 5), deleted=False)
    assert names(cache) is None  # the events alone may not have shown everything yet
    cache.relisted("ToolBinding", NS, [binding("a", 5), binding("b", 6)], "10")
    assert names(cache) == ["a", "b"]
    assert names(cache, "elsewhere") is None  # a namespace no list covered
    cache.keep("ToolBinding", binding("c", 11), deleted=False)
    cache.keep("ToolBinding", binding("b", 12), deleted=True)
    assert names(cache) == ["a", "c"]


def test_the_bindings_of_one_agent_come_from_an_index_that_follows_every_change() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)

    def of(agent: str) -> list[str]:
        return [b["metadata"]["name"] for b in kube.list_naming(TOOL_BINDING, NS, agent)]

    other = binding("x", 4)
    other["spec"]["agentRef"]["name"] = "other"
    cache.relisted("ToolBinding", NS, [binding("a", 5), binding("b", 6), other], "10")
    assert of("contracts") == ["a", "b"]
    assert of("other") == ["x"]
    moved = binding("a", 11)
    moved["spec"]["agentRef"]["name"] = "other"  # re-pointed to another agent
    cache.keep("ToolBinding", moved, deleted=False)
    cache.keep("ToolBinding", binding("b", 12), deleted=True)
    assert of("contracts") == []
    assert of("other") == ["a", "x"]
    cache.relisted("ToolBinding", NS, [moved], "20")  # "x" went without an event
    assert of("other") == ["a"]
    assert kube.requests == []  # all from the cache


def test_a_relist_drops_what_a_missed_delete_left_and_never_brings_back_a_deleted_one() -> None:
    cache = WatchCache()
    cache.relisted("ToolBinding", NS, [binding("a", 5), binding("b", 6)], "10")
    cache.keep("ToolBinding", binding("late", 21), deleted=False)  # after the next list's version
    cache.keep("ToolBinding", binding("a", 19), deleted=True)  # deleted after that list was taken
    # a list at version 20: "b" is gone (its DELETED event was missed), "a" still listed
    cache.relisted("ToolBinding", NS, [binding("a", 5)], "20")
    assert names(cache) == ["late"]
    cache.relisted("ToolBinding", NS, [], "30")
    assert names(cache) == []


def test_the_reconcilers_lists_of_bindings_come_from_the_cache_once_listed() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    path = "/apis/sleuth.dev/v1alpha1/namespaces/team-a/toolbindings"
    kube.store[path] = {"metadata": {"resourceVersion": "7"}, "items": [binding("a", 5)]}
    assert kube.list(TOOL_BINDING, NS) == [binding("a", 5)]
    assert kube.requests == ["GET"]  # not yet listed into the cache: a real list
    items, version = kube.list_at(TOOL_BINDING, NS)
    cache.relisted("ToolBinding", NS, items, version)
    kube.requests.clear()
    assert kube.list(TOOL_BINDING, NS) == [binding("a", 5)]
    assert kube.requests == []


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=agent", True),
        ("app==agent,tier=web", True),
        ("app=model", False),
        ("app!=model", True),
        ("app in (model,agent),tier", True),
        ("app notin (model, agent)", False),
        ("!owner", True),
        ("!tier", False),
        ("missing", False),
        ("version>2", None),  # a form it does not read: the caller lists for real
    ],
)
def test_label_selectors_are_read_as_the_apiserver_reads_them(
    selector: str, expected: bool | None
) -> None:
    assert matches(selector, {"app": "agent", "tier": "web"}) is expected


def owned_map(name: str, owner: str, component: str) -> dict[str, Any]:
    obj = config_map("x")
    obj["metadata"] |= {
        "name": name,
        "uid": f"u-{name}",
        "labels": {
            "app.kubernetes.io/instance": "docs",
            "app.kubernetes.io/component": component,
            "app.kubernetes.io/managed-by": MANAGED_BY,
        },
        "ownerReferences": [{"uid": owner, "controller": True}],
    }
    return obj


def test_pruning_reads_the_owners_children_from_the_watch_cache() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    for obj in (
        owned_map("docs-agent", "uid-docs", "agent"),
        owned_map("docs-old", "uid-docs", "agent"),
        owned_map("docs-model", "uid-docs", "model"),  # another selector's
        owned_map("other-agent", "uid-other", "agent"),  # another owner's
    ):
        kube.store[f"/api/v1/namespaces/{NS}/configmaps/{obj['metadata']['name']}"] = obj
        cache.seen_child(obj)
    owner = Owner("AgentDeployment", "docs", NS, "uid-docs")
    selector = "app.kubernetes.io/instance=docs,app.kubernetes.io/component in (agent)"
    removed = prune(kube, owner, [CONFIG_MAP], selector, {("ConfigMap", "docs-agent")})
    assert removed == ["ConfigMap/docs-old"]
    assert kube.requests == ["DELETE"]  # no list: the children came from the cache
    [kept] = cache.owned("uid-docs", "v1", "ConfigMap", NS, selector) or []
    assert kept["metadata"]["name"] == "docs-agent"
    # a selector the cache cannot read: a real list, filtered by owner
    kube.requests.clear()
    assert kube.owned(CONFIG_MAP, NS, "version>2", "uid-docs") == []
    assert kube.requests == ["GET"]


def deployment(generation: int, available: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "docs-tool", "namespace": NS, "generation": generation},
        "spec": {"replicas": 2, "template": {"spec": {"containers": []}}},
        "status": {"observedGeneration": generation, "availableReplicas": available},
    }


def test_rollouts_are_read_from_the_watch_or_from_this_process_own_newer_write() -> None:
    cache = WatchCache()
    kube = FakeApi(cache)
    path = f"/apis/apps/v1/namespaces/{NS}/deployments/docs-tool"
    kube.store[path] = deployment(3, 2)
    assert kube.observed(DEPLOYMENT, NS, "docs-tool") == kube.store[path]
    assert kube.requests == ["GET"]  # not reported by the watch yet: read
    cache.seen_child(deployment(3, 1))  # the watch lags one status update behind
    kube.requests.clear()
    seen = kube.observed(DEPLOYMENT, NS, "docs-tool")
    assert kube.requests == []
    assert seen is not None
    assert seen["status"]["availableReplicas"] == 1
    kube.apply(deployment(4, 0))  # this process writes generation 4
    kube.requests.clear()
    written = kube.observed(DEPLOYMENT, NS, "docs-tool")
    assert written is not None
    assert written["metadata"]["generation"] == 4  # the write's response, before its event
    assert kube.requests == []
    late = deployment(3, 2)
    late["metadata"]["resourceVersion"] = "0"  # an event older than that write, late
    cache.seen_child(late)
    assert kube.observed(DEPLOYMENT, NS, "docs-tool") == written


class StatusApi(FakeApi):
    """Reads, and merge-patches of the status subresource, of sleuth objects."""

    def answer(self, request: Request) -> dict[str, Any] | None:
        if request.method != "PATCH":
            return super().answer(request)
        self.requests.append(request.method)
        assert request.content_type == "application/merge-patch+json"
        assert request.path.endswith("/status")
        obj = self.store[request.path.removesuffix("/status")]
        self.stamp(obj)
        obj["status"] = {**(obj.get("status") or {}), **request.body["status"]}
        return copy.deepcopy(obj)


def test_sleuth_objects_are_read_from_the_cache_as_watched_or_as_last_written() -> None:
    cache = WatchCache()
    kube = StatusApi(cache)
    path = TOOL_BINDING.path(NS, "docs")
    kube.store[path] = binding("docs", 5)
    kube.version = 5
    assert kube.get(TOOL_BINDING, NS, "docs") == binding("docs", 5)
    assert kube.requests == ["GET"]  # not watched yet: read
    cache.keep("ToolBinding", binding("docs", 5), deleted=False)
    kube.requests.clear()
    assert kube.get(TOOL_BINDING, NS, "docs") == binding("docs", 5)
    assert kube.requests == []  # watched: no request
    kube.patch_status(TOOL_BINDING, NS, "docs", {"toolName": "docs"})
    cache.keep("ToolBinding", binding("docs", 5), deleted=False)  # an older event, late
    kept = kube.get(TOOL_BINDING, NS, "docs")
    assert kept is not None
    assert kept["status"] == {"toolName": "docs"}
    assert kube.requests == ["PATCH"]
    cache.keep("ToolBinding", kube.store[path], deleted=True)
    del kube.store[path]
    assert kube.get(TOOL_BINDING, NS, "docs") is None  # deleted: read, and absent
    assert kube.requests == ["PATCH", "GET"]
    assert kube.get(TOOL_BINDING, NS, "docs", sub="status") is None  # a subresource: read
