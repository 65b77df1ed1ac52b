"""The resync's lists of child names against the test control plane: a child deleted while no
watch reported it (kopf relists after "410 Gone" without DELETED events) is forgotten by the
watch cache and applied again; a kind the cluster does not serve changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from sleuth.operator.controller import MANAGED, Controller, OperatorSettings
from sleuth.operator.evalmetrics import EvalMetrics
from sleuth.operator.loop.runtime import LoopSettings
from sleuth.operator.loop.watchcache import child_key

pytestmark = [pytest.mark.cluster]


def config_map(namespace: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "data": {"config": name},
    }


def test_a_child_deleted_without_an_event_is_applied_again_after_the_resync_list(
    kube: Any, namespace: str
) -> None:
    rt = Controller.build(
        OperatorSettings(
            loop=LoopSettings(kubeconfig=str(kube.kubeconfig), namespaces=(namespace,))
        ),
        registry=CollectorRegistry(),
        evals=EvalMetrics(),
    )
    operator = rt.loop.kube
    kept, lost = config_map(namespace, "kept"), config_map(namespace, "lost")
    for manifest in (kept, lost):
        rt.loop.cache.seen_child(operator.apply(manifest))  # as the watch would report the writes
    kube.kubectl("delete", "configmap", "lost", "-n", namespace)  # no watch runs here: no event
    writes = operator.metrics.total_writes()
    operator.apply(lost)
    assert operator.metrics.total_writes() == writes  # the cache still vouches for it

    rt.loop.relist(children=True)  # every child kind, PrometheusRule included (not served here)

    assert rt.loop.cache.child(child_key(lost)) is None
    assert rt.loop.cache.child(child_key(kept)) is not None
    operator.apply(lost)
    assert operator.metrics.total_writes() == writes + 1
    found = kube.kubectl("get", "configmap", "lost", "-n", namespace, "-o", "name")
    assert found.stdout.strip() == "configmap/lost"
