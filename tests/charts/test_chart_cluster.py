"""The chart in the real control plane (kwok-simulated nodes): install, RBAC, upgrade, uninstall.

kwok does not run containers, so "the operator is running" means: the rendered objects are
accepted by the API server, the pod is scheduled on a CPU node and reported Ready, and the
Deployment is Available. The operator itself is then run on this host *with the chart's
ServiceAccount token*, which proves the chart's Role is enough for the real reconcile.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from chart_testkit import CHART, ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Every namespaced kind the chart can create, and the cluster-scoped ones.
NAMESPACED_KINDS = (
    "deployments,replicasets,pods,services,serviceaccounts,configmaps,roles,rolebindings,"
    "poddisruptionbudgets,servicemonitors.monitoring.coreos.com,prometheusrules.monitoring.coreos.com"
)
CLUSTER_KINDS = "clusterroles,clusterrolebindings"
EVAL_SCHEDULE = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "contracts-nightly"},
    "spec": {
        "agentRef": {"name": "contracts"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    },
}
OPERATOR_CONTAINER = 0


def _new_namespace(kube: Any) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def other_namespace(kube: Any) -> Iterator[str]:
    yield from _new_namespace(kube)


@pytest.fixture
def third_namespace(kube: Any) -> Iterator[str]:
    yield from _new_namespace(kube)


def install(
    kube: Any, release: str, namespace: str, *sets: str, verb: str = "install", reuse: bool = False
) -> str:
    args = [verb, release, str(CHART), "-n", namespace, "--wait", "--timeout", "120s"]
    args += ["--reuse-values"] if reuse else []
    for s in sets:
        args += ["--set", s]
    return str(kube.helm(*args).stdout)


def get(kube: Any, *args: str) -> Any:
    return json.loads(kube.kubectl("get", *args, "-o", "json").stdout)


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
    deployment = get(kube, "deployment", operator, "-n", namespace)
    assert available(deployment)
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
    deployment = get(kube, "deployment", operator, "-n", namespace)
    assert deployment["metadata"]["generation"] == 2
    assert deployment["status"]["observedGeneration"] == 2
    assert available(deployment)
    second = _eventually(
        lambda: (pods := operator_pods(kube, namespace, release)) and len(pods) == 2 and pods,
        60,
        "the old replicas are gone",
    )
    assert not {p["metadata"]["name"] for p in first} & {p["metadata"]["name"] for p in second}
    for pod in second:
        args = pod["spec"]["containers"][OPERATOR_CONTAINER]["args"]
        assert "--resync-seconds=45" in args
        assert "--resync-seconds=30" not in args
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


def _token_kubeconfig(kube: Any, namespace: str, sa: str, path: Path) -> Path:
    token = kube.kubectl("create", "token", sa, "-n", namespace, "--duration=30m").stdout.strip()
    admin = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": cluster["name"], "user": sa}}],
        "current-context": sa,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def _eventually(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(1)
    raise AssertionError(f"never happened within {timeout:.0f}s: {what} (last: {last!r})")


def _run_operator_as(
    kube: Any,
    release_namespace: str,
    sa: str,
    watch: list[str],
    tmp_path: Path,
    agents_in: str,
    timeout: float = 90,
) -> tuple[dict[str, Any], str]:
    """Run `sleuth operator` with the ServiceAccount's token; apply the example agent and an
    EvalSchedule of it; wait for the agent's status and for the schedule's CronJob and the
    ServiceAccount, Role and RoleBinding of its pods (the operator may create that Role only
    because it holds every permission in it). Returns the status and the operator's log."""
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    kubeconfig = _token_kubeconfig(kube, release_namespace, sa, tmp_path / "sa.kubeconfig")
    log = tmp_path / "operator.log"
    sleuth = Path(sys.executable).parent / "sleuth"
    args = [str(sleuth), "operator", "--kubeconfig", str(kubeconfig), "--resync-seconds", "5"]
    for namespace in watch:
        args += ["--namespace", namespace]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        examples = ROOT / "examples" / "contracts"
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", agents_in, "-f", str(examples / name))

        def reconciled() -> Any:
            obj = get(kube, "agentdeployment", "contracts", "-n", agents_in)
            status = obj.get("status") or {}
            return status.get("observedGeneration") == obj["metadata"]["generation"] and status

        status = _eventually(reconciled, timeout, "the AgentDeployment's status is written")
        kube.kubectl("apply", "-n", agents_in, "-f", "-", input=yaml.safe_dump(EVAL_SCHEDULE))
        children = [
            f"{kind}/contracts-nightly-eval"
            for kind in ("cronjob", "serviceaccount", "role", "rolebinding")
        ]

        def eval_children() -> bool:
            found = kube.kubectl("get", *children, "-n", agents_in, "-o", "name", check=False)
            return found.returncode == 0 and len(found.stdout.split()) == 4

        try:
            _eventually(eval_children, timeout, "the EvalSchedule's CronJob and RBAC objects")
        except AssertionError as err:
            schedule = get(kube, "evalschedule", "contracts-nightly", "-n", agents_in)
            conditions = (schedule.get("status") or {}).get("conditions")
            tail = log.read_text(errors="replace")[-3000:]
            raise AssertionError(
                f"{err}\nconditions: {conditions}\noperator log:\n{tail}"
            ) from None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return status, log.read_text(errors="replace")


def test_operator_reconciles_with_only_the_charts_namespace_role(
    kube: Any, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    """The real operator, authenticated as the chart's ServiceAccount, reconciles an agent."""
    release = f"o{namespace[2:]}"
    install(kube, release, namespace, f"watchNamespaces={{{other_namespace}}}")
    sa = f"{release}-sleuth-operator"
    status, text = _run_operator_as(
        kube, namespace, sa, [other_namespace], tmp_path, agents_in=other_namespace
    )
    assert {c["type"] for c in status["conditions"]} >= {"Ready", "Progressing", "Degraded"}
    children = get(
        kube,
        "deployments",
        "-n",
        other_namespace,
        "-l",
        "app.kubernetes.io/managed-by=sleuth-operator",
    )["items"]
    assert {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in children} == {
        "model",
        "agent",
    }
    refused = [line for line in text.splitlines() if "403" in line or "Forbidden" in line]
    assert refused == [], "\n".join(refused[:5])
    kube.helm("uninstall", release, "-n", namespace, "--wait")


def test_cluster_wide_operator_without_secret_access_still_reports_status(
    kube: Any, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    """A 403 on a referenced Secret is reported as unverifiable; the reconcile goes on."""
    release = f"w{namespace[2:]}"
    install(kube, release, namespace)  # cluster-wide, Secrets readable nowhere
    try:
        status, text = _run_operator_as(
            kube,
            namespace,
            f"{release}-sleuth-operator",
            [],
            tmp_path,
            agents_in=other_namespace,
            timeout=60,
        )
        conditions = {c["type"]: c for c in status["conditions"]}
        assert set(conditions) == {"Ready", "Progressing", "Degraded"}
        degraded = conditions["Degraded"]
        assert (degraded["status"], degraded["reason"]) == ("Unknown", "SecretUnverifiable")
        assert "Secret hf-token" in degraded["message"]
        assert "lacks permission to read" in degraded["message"]
        assert "fail to start if it is really missing" in degraded["message"]
        assert conditions["Ready"]["reason"] != "SecretNotFound"
        # The children were applied despite the unverifiable Secret.
        children = get(
            kube,
            "deployments",
            "-n",
            other_namespace,
            "-l",
            "app.kubernetes.io/managed-by=sleuth-operator",
        )["items"]
        assert {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in children} == {
            "model",
            "agent",
        }
        refused = [line for line in text.splitlines() if "403" in line and "/secrets/" in line]
        assert refused == [], "a 403 on a Secret is not an error any more"
    finally:
        kube.helm("uninstall", release, "-n", namespace, "--wait")


def test_an_older_charts_rbac_is_reported_on_the_evalschedule_and_heals_on_upgrade(
    kube: Any, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    """Without the right to create the eval pods' Role (a chart older than the operator), the
    EvalSchedule says so (Ready=False, EvalAccessForbidden, naming the fix); helm upgrade heals."""
    release = f"r{namespace[2:]}"
    install(kube, release, namespace, f"watchNamespaces={{{other_namespace}}}")
    (role,) = get(
        kube, "roles", "-n", other_namespace, "-l", f"app.kubernetes.io/instance={release}"
    )["items"]
    kept = [r for r in role["rules"] if "roles" not in r.get("resources", [])]
    assert len(kept) == len(role["rules"]) - 1
    role["rules"] = kept
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        role["metadata"].pop(key, None)
    kube.kubectl("replace", "-f", "-", input=json.dumps(role))

    kubeconfig = _token_kubeconfig(
        kube, namespace, f"{release}-sleuth-operator", tmp_path / "sa.kubeconfig"
    )
    sleuth = Path(sys.executable).parent / "sleuth"
    args = [str(sleuth), "operator", "--kubeconfig", str(kubeconfig), "--resync-seconds", "3"]
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*args, "--namespace", other_namespace], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        examples = ROOT / "examples" / "contracts"
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", other_namespace, "-f", str(examples / name))
        kube.kubectl("apply", "-n", other_namespace, "-f", "-", input=yaml.safe_dump(EVAL_SCHEDULE))

        def ready() -> dict[str, Any] | None:
            schedule = get(kube, "evalschedule", "contracts-nightly", "-n", other_namespace)
            conditions = (schedule.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Ready"), None)

        refused = _eventually(
            lambda: (c := ready()) is not None and c["reason"] == "EvalAccessForbidden" and c,
            90,
            "the EvalSchedule reports the refused Role",
        )
        assert refused["status"] == "False"
        assert "contracts-nightly-eval" in refused["message"]
        assert "HTTP 403" in refused["message"]
        assert "Upgrade the chart" in refused["message"]
        assert (
            kube.kubectl(
                "get", "cronjob/contracts-nightly-eval", "-n", other_namespace, check=False
            ).returncode
            == 0
        )  # the rest is still applied

        install(kube, release, namespace, verb="upgrade", reuse=True)  # puts the Role back
        healed = _eventually(
            lambda: (c := ready()) is not None and c["status"] == "True" and c,
            90,
            "the EvalSchedule is Ready after the upgrade",
        )
        assert healed["reason"] == "Scheduled"
        kube.kubectl(
            "get", "role/contracts-nightly-eval", "rolebinding/contracts-nightly-eval",
            "-n", other_namespace,
        )  # fmt: skip
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log.read_text(errors="replace")
    kube.helm("uninstall", release, "-n", namespace, "--wait")
