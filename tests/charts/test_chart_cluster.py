"""The chart in the real control plane (kwok-simulated nodes): install, RBAC, upgrade, uninstall.

kwok does not run containers, so "the operator is running" means: the rendered objects are
accepted by the API server, the pod is scheduled on a CPU node and reported Ready, and the
Deployment is Available. The operator itself is then run on this host *with the chart's
ServiceAccount token*, which proves the chart's Role is enough for the real reconcile.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.charts.chart_cluster_kit import get, install
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Every namespaced kind the chart can create, and the cluster-scoped ones.
NAMESPACED_KINDS = (
    "deployments,replicasets,pods,services,serviceaccounts,configmaps,roles,rolebindings,"
    "poddisruptionbudgets,servicemonitors.monitoring.coreos.com,prometheusrules.monitoring.coreos.com"
)
CLUSTER_KINDS = "clusterroles,clusterrolebindings"
OPERATOR_CONTAINER = 0


def can(kube: Any, sa: str, verb: str, resource: str, *where: str) -> bool:
    proc = kube.kubectl("auth", "can-i", verb, resource, f"--as={sa}", *where, check=False)
    answer = proc.stdout.strip()
    assert answer in ("yes", "no"), proc.stderr
    return answer == "yes"


def operator_pods(kube: Any, namespace: str, release: str) -> list[dict[str, Any]]:
    selector = f"app.kubernetes.io/instance={release},app.kubernetes.io/component=operator"
    pods = get(kube, "pods", "-n", namespace, "-l", selector)
    return [p for p in pods["items"] if not p["metadata"].get("deletionTimestamp")]


def available(deployment: dict[str, Any]) -> bool:
    conditions = {c["type"]: c["status"] for c in deployment["status"].get("conditions", [])}
    return conditions.get("Available") == "True"


def test_install_upgrade_uninstall(kube: Any, namespace: str) -> None:
    release = f"s{namespace[2:]}"
    operator = f"{release}-sleuth-operator"
    notes = install(
        kube,
        release,
        namespace,
        "metrics.serviceMonitor.enabled=true",
        "metrics.prometheusRule.enabled=true",
        f"rbac.secretNamespaces={{{namespace}}}",
        "operator.replicas=2",
    )
    # NOTES tell the user what to do next.
    assert f"kubectl -n {namespace} rollout status deployment/{operator}" in notes
    assert "kubectl apply --server-side --force-conflicts -f charts/sleuth/crds/" in notes
    assert f"It may read Secrets only in:\n  - {namespace}" in notes
    # CRDs are there and served.
    for crd in ("agentdeployments.sleuth.dev", "toolbindings.sleuth.dev"):
        kube.kubectl("wait", "--for=condition=Established", f"crd/{crd}", "--timeout=60s")
    assert "agentdeployments" in kube.kubectl("api-resources", "--api-group=sleuth.dev").stdout
    # The operator is Available, on a CPU node (GPU nodes are tainted; it tolerates nothing).
    # helm --wait counts ready pods of the new ReplicaSet; the Deployment's own status follows.
    eventually(
        lambda: available(get(kube, "deployment", operator, "-n", namespace)),
        60,
        "the operator Deployment Available",
    )
    first = operator_pods(kube, namespace, release)
    assert len(first) == 2  # two replicas, safe with leader election
    for pod in first:
        node = get(kube, "node", pod["spec"]["nodeName"])
        assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]
        assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    # Monitoring objects were accepted by prometheus-operator's CRD schemas.
    monitors = get(kube, "servicemonitors", "-n", namespace)["items"]
    assert sorted(m["metadata"]["name"] for m in monitors) == [
        f"{release}-sleuth-agents",
        f"{release}-sleuth-models",
        operator,
    ]
    kube.kubectl("get", "prometheusrule", operator, "-n", namespace)

    # helm upgrade with a changed value rolls the operator (its pod template changed).
    install(kube, release, namespace, "operator.resyncSeconds=45", verb="upgrade", reuse=True)
    deployment = eventually(
        lambda: (
            (d := get(kube, "deployment", operator, "-n", namespace))["status"].get(
                "observedGeneration"
            )
            == 2
            and available(d)
            and d
        ),
        60,
        "the upgraded operator Deployment observed and Available",
    )
    assert deployment["metadata"]["generation"] == 2
    second = eventually(
        lambda: (pods := operator_pods(kube, namespace, release)) and len(pods) == 2 and pods,
        60,
        "the old replicas are gone",
    )
    assert not {p["metadata"]["name"] for p in first} & {p["metadata"]["name"] for p in second}
    for pod in second:
        args = pod["spec"]["containers"][OPERATOR_CONTAINER]["args"]
        assert "--resync-seconds=45" in args
        assert "--resync-seconds=300" not in args
    replicasets = get(
        kube, "replicasets", "-n", namespace, "-l", "app.kubernetes.io/component=operator"
    )
    assert len(replicasets["items"]) == 2

    # helm uninstall leaves nothing of the release behind (the CRDs stay, by Helm's design).
    kube.helm("uninstall", release, "-n", namespace, "--wait", "--timeout", "120s")
    selector = f"app.kubernetes.io/instance={release}"
    left = kube.kubectl("get", NAMESPACED_KINDS, "-A", "-l", selector, "-o", "name").stdout.split()
    left += kube.kubectl("get", CLUSTER_KINDS, "-l", selector, "-o", "name").stdout.split()
    assert left == []
    kube.kubectl("get", "crd", "agentdeployments.sleuth.dev")


def test_cluster_wide_rbac_is_least_privilege(
    kube: Any, namespace: str, other_namespace: str, third_namespace: str
) -> None:
    release = f"c{namespace[2:]}"
    install(kube, release, namespace, f"rbac.secretNamespaces={{{other_namespace}}}")
    sa = f"system:serviceaccount:{namespace}:{release}-sleuth-operator"
    anywhere = ("-n", third_namespace)
    # What the operator does, in any namespace.
    assert can(kube, sa, "watch", "agentdeployments.sleuth.dev", "-A")
    assert can(kube, sa, "list", "toolbindings.sleuth.dev", "-A")
    assert can(kube, sa, "patch", "agentdeployments.sleuth.dev", "--subresource=status", *anywhere)
    assert can(kube, sa, "patch", "deployments.apps", *anywhere)
    assert can(kube, sa, "create", "networkpolicies.networking.k8s.io", *anywhere)
    assert can(kube, sa, "delete", "configmaps", *anywhere)
    assert can(kube, sa, "create", "events", *anywhere)
    assert can(kube, sa, "get", "secrets", "-n", other_namespace)
    lease = f"leases.coordination.k8s.io/{release}-sleuth-operator"
    assert can(kube, sa, "update", lease, "-n", namespace)
    assert can(kube, sa, "create", "leases.coordination.k8s.io", "-n", namespace)
    # What it must not do.
    assert not can(kube, sa, "update", "leases.coordination.k8s.io/other", "-n", namespace)
    assert not can(kube, sa, "get", lease, *anywhere)
    assert not can(kube, sa, "get", "secrets", *anywhere)
    assert not can(kube, sa, "get", "secrets", "-A")
    assert not can(kube, sa, "list", "secrets", "-n", other_namespace)
    assert not can(kube, sa, "delete", "namespaces")
    assert not can(kube, sa, "delete", "agentdeployments.sleuth.dev", *anywhere)
    assert not can(kube, sa, "create", "pods", *anywhere)
    # The eval pods' account: it may create Roles and RoleBindings, but only grant what it holds
    # (no escalate, no bind), and nothing cluster-wide.
    assert can(kube, sa, "create", "serviceaccounts", *anywhere)
    assert can(kube, sa, "create", "roles.rbac.authorization.k8s.io", *anywhere)
    assert can(kube, sa, "create", "rolebindings.rbac.authorization.k8s.io", *anywhere)
    assert can(kube, sa, "get", "evalschedules.sleuth.dev", "--subresource=status", *anywhere)
    assert not can(kube, sa, "escalate", "roles.rbac.authorization.k8s.io", *anywhere)
    assert not can(kube, sa, "bind", "roles.rbac.authorization.k8s.io", *anywhere)
    assert not can(kube, sa, "bind", "clusterroles.rbac.authorization.k8s.io", *anywhere)
    assert not can(kube, sa, "create", "serviceaccounts", "--subresource=token", *anywhere)
    assert not can(kube, sa, "create", "clusterroles.rbac.authorization.k8s.io")
    assert not can(kube, sa, "create", "clusterrolebindings.rbac.authorization.k8s.io")
    assert not can(kube, sa, "update", "customresourcedefinitions.apiextensions.k8s.io")
    assert not can(kube, sa, "get", "nodes")
    kube.helm("uninstall", release, "-n", namespace, "--wait")


def test_namespace_scoped_rbac_stays_in_its_namespaces(
    kube: Any, namespace: str, other_namespace: str, third_namespace: str
) -> None:
    release = f"n{namespace[2:]}"
    install(kube, release, namespace, f"watchNamespaces={{{other_namespace}}}")
    selector = f"app.kubernetes.io/instance={release}"
    assert kube.kubectl("get", CLUSTER_KINDS, "-l", selector, "-o", "name").stdout == ""
    sa = f"system:serviceaccount:{namespace}:{release}-sleuth-operator"
    watched = ("-n", other_namespace)
    assert can(kube, sa, "watch", "agentdeployments.sleuth.dev", *watched)
    assert can(kube, sa, "patch", "toolbindings.sleuth.dev", "--subresource=status", *watched)
    assert can(kube, sa, "patch", "services", *watched)
    assert can(kube, sa, "create", "roles.rbac.authorization.k8s.io", *watched)
    assert can(kube, sa, "delete", "rolebindings.rbac.authorization.k8s.io", *watched)
    assert can(kube, sa, "create", "serviceaccounts", *watched)
    assert not can(kube, sa, "create", "roles.rbac.authorization.k8s.io", "-n", third_namespace)
    assert can(kube, sa, "get", "secrets", *watched)
    assert not can(kube, sa, "list", "secrets", *watched)
    assert not can(kube, sa, "list", "agentdeployments.sleuth.dev", "-A")
    assert not can(kube, sa, "list", "agentdeployments.sleuth.dev", "-n", third_namespace)
    assert not can(kube, sa, "get", "secrets", "-n", third_namespace)
    assert not can(kube, sa, "get", "secrets", "-n", namespace)
    assert not can(kube, sa, "delete", "namespaces")
    deployment = get(kube, "deployment", f"{release}-sleuth-operator", "-n", namespace)
    args = deployment["spec"]["template"]["spec"]["containers"][OPERATOR_CONTAINER]["args"]
    assert f"--namespace={other_namespace}" in args
    kube.helm("uninstall", release, "-n", namespace, "--wait")
