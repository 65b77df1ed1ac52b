"""The real operator run on this host *as the chart's ServiceAccount* (its token): the chart's
RBAC is enough for the real reconcile, a 403 on a Secret is reported as unverifiable (and the
Secret not used), and an older
chart's RBAC that refuses the eval pods' Role is reported on the EvalSchedule and healed by
`helm upgrade`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.charts.chart_cluster_kit import EVAL_SCHEDULE, get, install, operator_as
from tests.charts.chart_testkit import CHART
from tests.support.golden import golden_configmap
from tests.support.paths import ROOT
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


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
    because it holds every permission in it), and for the agent's model and agent Deployments.
    Returns the status and the operator's log."""
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    with operator_as(kube, release_namespace, sa, watch, tmp_path) as log:
        examples = ROOT / "examples" / "contracts"
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", agents_in, "-f", str(examples / name))

        def reconciled() -> Any:
            obj = get(kube, "agentdeployment", "contracts", "-n", agents_in)
            status = obj.get("status") or {}
            return status.get("observedGeneration") == obj["metadata"]["generation"] and status

        status = eventually(reconciled, timeout, "the AgentDeployment's status is written")
        for doc in (golden_configmap(), EVAL_SCHEDULE):
            kube.kubectl("apply", "-n", agents_in, "-f", "-", input=yaml.safe_dump(doc))
        children = [
            f"{kind}/contracts-nightly-eval"
            for kind in ("cronjob", "serviceaccount", "role", "rolebinding")
        ]

        def eval_children() -> bool:
            found = kube.kubectl("get", *children, "-n", agents_in, "-o", "name", check=False)
            return found.returncode == 0 and len(found.stdout.split()) == 4

        try:
            eventually(eval_children, timeout, "the EvalSchedule's CronJob and RBAC objects")
        except AssertionError as err:
            schedule = get(kube, "evalschedule", "contracts-nightly", "-n", agents_in)
            conditions = (schedule.get("status") or {}).get("conditions")
            tail = log.read_text(errors="replace")[-3000:]
            raise AssertionError(
                f"{err}\nconditions: {conditions}\noperator log:\n{tail}"
            ) from None
        # the agent's Deployment follows the model's once its first-rollout hold (2 s) is over
        eventually(lambda: _components(kube, agents_in) == {"model", "agent"}, timeout, "both")
    return status, log.read_text(errors="replace")


def _components(kube: Any, namespace: str) -> set[str]:
    """The components of the operator's Deployments in ``namespace``."""
    children = get(
        kube, "deployments", "-n", namespace, "-l", "app.kubernetes.io/managed-by=sleuth-operator"
    )["items"]
    return {d["metadata"]["labels"]["app.kubernetes.io/component"] for d in children}


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
    assert _components(kube, other_namespace) == {"model", "agent"}
    # an HTTP 403 in a log line, not the milliseconds of a timestamp (",403")
    refused = [
        line
        for line in text.splitlines()
        if re.search(r"\b403\b", line.split("]", 1)[-1]) or "Forbidden" in line
    ]
    assert refused == [], "\n".join(refused[:5])
    # The chart's Role in default let it read the API server's endpoints (apiserver.py).
    assert "agents that admit ServiceAccount tokens may reach the API server at" in text, text
    kube.helm("uninstall", release, "-n", namespace, "--wait")


def test_an_operator_that_may_not_read_the_api_server_endpoints_fails_closed_and_says_so(
    kube: Any, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    """Installed with networkPolicy.apiServer (so without the Role on EndpointSlice
    default/kubernetes) but run without its flags: the operator knows no API server endpoint, so
    the agent's policy has no route to it, and the AgentDeployment, whose callers name
    ServiceAccounts, reports Degraded APIServerUnknown naming them."""
    release = f"a{namespace[2:]}"
    sets = [
        f"watchNamespaces={{{other_namespace}}}",
        "networkPolicy.apiServer.cidrs={10.0.0.1/32}",
        "networkPolicy.apiServer.port=6443",
    ]
    install(kube, release, namespace, *sets)
    try:
        sa = f"{release}-sleuth-operator"
        status, text = _run_operator_as(
            kube, namespace, sa, [other_namespace], tmp_path, agents_in=other_namespace
        )
    finally:
        kube.helm("uninstall", release, "-n", namespace, "--wait")
    assert "could not read EndpointSlice default/kubernetes (KubeRejected)" in text, text
    assert "networkPolicy.apiServer" in text
    degraded = {c["type"]: c for c in status["conditions"]}["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "APIServerUnknown"), degraded
    assert degraded["message"].endswith("callers contracts-portal"), degraded
    policy = get(kube, "networkpolicy", "contracts-agent", "-n", other_namespace)
    assert not [
        r
        for r in policy["spec"]["egress"]
        if {"port": 6443, "protocol": "TCP"} in r.get("ports", [])
    ]


def test_cluster_wide_operator_without_secret_access_uses_no_secret(
    kube: Any, namespace: str, other_namespace: str, tmp_path: Path
) -> None:
    """A 403 on a referenced Secret: the operator cannot see whether the Secret opted in to the
    use, so it does not use it: the resource is not rendered and says why."""
    release = f"w{namespace[2:]}"
    install(kube, release, namespace)  # cluster-wide, Secrets readable nowhere
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    try:
        with operator_as(kube, namespace, f"{release}-sleuth-operator", [], tmp_path) as log:
            examples = ROOT / "examples" / "contracts"
            for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
                kube.kubectl("apply", "-n", other_namespace, "-f", str(examples / name))

            def ready() -> Any:
                obj = get(kube, "agentdeployment", "contracts", "-n", other_namespace)
                conditions = (obj.get("status") or {}).get("conditions") or []
                found = next((c for c in conditions if c["type"] == "Ready"), {})
                return found.get("reason") == "SecretUnverifiable" and found

            found = eventually(ready, 60, "the AgentDeployment reports SecretUnverifiable")
        assert found["status"] == "False"
        assert found["message"].startswith("spec.model.tokenSecretRef: Secret hf-token is not used")
        assert f"may not read Secrets in namespace {other_namespace}" in found["message"]
        assert _components(kube, other_namespace) == set()  # nothing runs with the Secret
        text = log.read_text(errors="replace")
        refused = [line for line in text.splitlines() if "403" in line and "/secrets/" in line]
        assert refused == [], "a 403 on a Secret is a condition, not an error"
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

    sa = f"{release}-sleuth-operator"
    with operator_as(kube, namespace, sa, [other_namespace], tmp_path) as log:
        examples = ROOT / "examples" / "contracts"
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", other_namespace, "-f", str(examples / name))
        for doc in (golden_configmap(), EVAL_SCHEDULE):
            kube.kubectl("apply", "-n", other_namespace, "-f", "-", input=yaml.safe_dump(doc))

        def ready() -> dict[str, Any] | None:
            schedule = get(kube, "evalschedule", "contracts-nightly", "-n", other_namespace)
            conditions = (schedule.get("status") or {}).get("conditions") or []
            return next((c for c in conditions if c["type"] == "Ready"), None)

        refused = eventually(
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
        healed = eventually(
            lambda: (c := ready()) is not None and c["status"] == "True" and c,
            90,
            "the EvalSchedule is Ready after the upgrade",
        )
        assert healed["reason"] == "Scheduled"
        kube.kubectl(
            "get", "role/contracts-nightly-eval", "rolebinding/contracts-nightly-eval",
            "-n", other_namespace,
        )  # fmt: skip
    assert "Traceback" not in log.read_text(errors="replace")
    kube.helm("uninstall", release, "-n", namespace, "--wait")


README_KINDS = ("agentdeployments", "toolbindings", "evalschedules")


def _health(kube: Any, namespace: str) -> dict[str, tuple[str, str]]:
    """``kind/name -> (Ready, Degraded)`` of every sleuth resource in ``namespace``."""
    out = {}
    for kind in README_KINDS:
        for obj in get(kube, kind, "-n", namespace)["items"]:
            conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
            ready, degraded = conds.get("Ready", {}), conds.get("Degraded", {})
            out[f"{obj['kind']}/{obj['metadata']['name']}"] = (
                f"{ready.get('status')} {ready.get('reason')}",
                f"{degraded.get('status')} {degraded.get('reason')}",
            )
    return out


def test_the_readme_path_ends_ready(kube: Any, namespace: str, tmp_path: Path) -> None:
    """The README to the letter: `helm install` with the chart's defaults (cluster-wide), then
    `kubectl apply -f examples/contracts/` with no namespace, which lands in `default`. Every
    resource ends Ready with Degraded=False: the operator may check the Secrets there, none is
    SecretUnverifiable."""
    release = f"d{namespace[2:]}"
    install(kube, release, namespace)  # the chart's defaults, nothing set
    sa = f"system:serviceaccount:{namespace}:{release}-sleuth-operator"
    eventually(
        lambda: (
            kube.kubectl(
                "auth", "can-i", "get", "secrets", f"--as={sa}", "-n", "default", check=False
            ).stdout.strip()
            == "yes"
        ),
        60,
        "the operator may read Secrets in default",
    )
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CHART / "crds"))
    examples = ROOT / "examples" / "contracts"
    try:
        with operator_as(
            kube, namespace, f"{release}-sleuth-operator", ["default"], tmp_path
        ) as log:
            kube.kubectl("apply", "-f", str(examples))  # the README's command, as written

            def healthy() -> dict[str, tuple[str, str]]:
                health = _health(kube, "default")
                assert len(health) == 5, health  # 1 agent, 3 bindings, 1 schedule
                wrong = {
                    what: state
                    for what, state in health.items()
                    if not state[0].startswith("True ") or state[1] != "False AsExpected"
                }
                assert not wrong, wrong
                return health

            eventually(healthy, 180, "every resource in default Ready with Degraded=False")
        assert "Traceback" not in log.read_text(errors="replace")
    finally:
        kube.kubectl("delete", "-f", str(examples), "--ignore-not-found", "--timeout=120s")
        kube.helm("uninstall", release, "-n", namespace, "--wait")
