"""An operator killed in the middle of a reconcile, then restarted, converges without duplicates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.operator.operator_testkit import OperatorProcess
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KINDS = "deployments,services,configmaps,networkpolicies"
# 5 Deployments, 5 Services, 4 ConfigMaps, 6 NetworkPolicies (model, agent, 3 tools, eval).
ALL = 20


def _children(kube: Any, ns: str) -> list[dict[str, Any]]:
    out = kube.kubectl("get", KINDS, "-n", ns, "-l", "sleuth.dev/agent=contracts", "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def test_killed_mid_reconcile_then_restarted_converges(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    # A one-second pause before each apply makes "in the middle of a reconcile" certain.
    slow = OperatorProcess(
        kube.kubeconfig, namespace, tmp_path / "slow.log", SLEUTH_FAULT_APPLY_DELAY_SECONDS="1"
    )
    slow.start()
    try:
        kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
        eventually(lambda: _children(kube, namespace), what="the first child")
    finally:
        slow.stop(kill=True)
    partial = _children(kube, namespace)
    assert 0 < len(partial) < ALL, [c["metadata"]["name"] for c in partial]

    restarted = OperatorProcess(kube.kubeconfig, namespace, tmp_path / "restarted.log")
    restarted.start()
    try:
        kube.kubectl(
            "wait",
            "-n",
            namespace,
            "--for=condition=Ready",
            "agentdeployment/contracts",
            "--timeout=120s",
        )
        kube.kubectl(
            "wait",
            "-n",
            namespace,
            "--for=condition=Ready",
            "toolbinding",
            "--all",
            "--timeout=60s",
        )
        children = eventually(
            lambda: (c := _children(kube, namespace)) and len(c) == ALL and c,
            what=f"all {ALL} children",
        )
        names = sorted(f"{c['kind']}/{c['metadata']['name']}" for c in children)
        assert len(names) == len(set(names))
        for child in children:
            assert len(child["metadata"]["ownerReferences"]) == 1
        # A config change may legitimately roll the agent once; what must not exist is two
        # live ReplicaSets (or two Deployments) doing the same job.
        live = eventually(
            lambda: (
                (
                    o := [
                        rs["metadata"]["ownerReferences"][0]["name"]
                        for rs in json.loads(
                            kube.kubectl("get", "replicasets", "-n", namespace, "-o", "json").stdout
                        )["items"]
                        if rs["spec"].get("replicas", 0) > 0
                    ]
                )
                and len(o) == 5
                and o
            ),
            what="one live ReplicaSet per Deployment",
        )
        assert len(set(live)) == 5
    finally:
        restarted.stop()
    # No finalizer is left behind: with the operator gone, deletion still completes.
    kube.kubectl("delete", "-n", namespace, "-f", str(EXAMPLES), "--timeout=60s")
    assert kube.kubectl("get", "sleuth", "-n", namespace, "-o", "name").stdout.strip() == ""
