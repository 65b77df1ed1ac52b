"""Two operator replicas are safe: one holds the Lease and reconciles, the other waits.

The chart runs the operator with ``--leader-election-lease``; these tests drive the elector
(sleuth.operator.loop.leader) and then two real ``sleuth operator`` processes against the test
control plane.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.kube import Kube
from sleuth.core.process import answers, free_port, stop_process
from sleuth.operator.loop.leader import REQUEST_TIMEOUT_SECONDS, LeaderElector, LeaseClient
from tests.support.paths import ROOT, SLEUTH
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def elector(kube: Any, namespace: str, identity: str, lost: list[str]) -> LeaderElector:
    return LeaderElector(
        LeaseClient(Kube(kube.api, timeout=REQUEST_TIMEOUT_SECONDS), namespace, "sleuth-operator"),
        identity=identity,
        duration=3,
        deadline=2,
        retry=0.3,
        on_lost=lambda: lost.append(identity),
    )


def holder(kube: Any, namespace: str) -> str:
    lease = json.loads(
        kube.kubectl("get", "lease", "sleuth-operator", "-n", namespace, "-o", "json").stdout
    )
    return str(lease["spec"].get("holderIdentity") or "")


def test_one_leader_at_a_time_and_takeover_after_expiry(kube: Any, namespace: str) -> None:
    lost: list[str] = []
    a, b = elector(kube, namespace, "a", lost), elector(kube, namespace, "b", lost)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    assert a.try_acquire_or_renew()  # renewing its own lease
    assert holder(kube, namespace) == "a"
    # a stops renewing (a frozen or partitioned pod): b waits out the lease, then takes it.
    assert eventually(b.try_acquire_or_renew, 20, "b takes the expired lease")
    assert holder(kube, namespace) == "b"
    assert not a.try_acquire_or_renew()  # a cannot take it back while b renews
    lease = json.loads(
        kube.kubectl("get", "lease", "sleuth-operator", "-n", namespace, "-o", "json").stdout
    )
    assert lease["spec"]["leaseTransitions"] == 1


def test_a_holder_that_finds_another_holder_steps_down(kube: Any, namespace: str) -> None:
    lost: list[str] = []
    a = elector(kube, namespace, "a", lost)
    assert a.try_acquire_or_renew()
    # b takes the lease behind a's back (an admin edit, or a's clock stalled for too long).
    lease = json.loads(
        kube.kubectl("get", "lease", "sleuth-operator", "-n", namespace, "-o", "json").stdout
    )
    lease["spec"]["holderIdentity"] = "b"
    kube.kubectl("replace", "-f", "-", input=json.dumps(lease))
    a.hold()
    eventually(lambda: lost == ["a"], 10, "a notices it lost the lease")
    a.release()
    assert holder(kube, namespace) == "b"  # a never releases what it does not hold


def test_release_hands_over_at_once(kube: Any, namespace: str) -> None:
    lost: list[str] = []
    a, b = elector(kube, namespace, "a", lost), elector(kube, namespace, "b", lost)
    b.duration = 3600  # b would wait an hour for an unreleased lease
    assert a.acquire()
    a.hold()
    assert not b.try_acquire_or_renew()
    a.release()
    assert holder(kube, namespace) == ""
    assert b.try_acquire_or_renew()
    assert lost == []


class Replica:
    """One `sleuth operator` process with leader election, as the chart starts it."""

    def __init__(self, kube: Any, namespace: str, log: Path) -> None:
        self.port = free_port()
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    str(SLEUTH),
                    "operator",
                    "--kubeconfig",
                    str(kube.kubeconfig),
                    "--namespace",
                    namespace,
                    "--resync-seconds",
                    "3",
                    "--leader-election-lease",
                    "sleuth-operator",
                    "--leader-election-namespace",
                    namespace,
                    "--liveness",
                    f"http://127.0.0.1:{self.port}/healthz",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def healthy(self) -> bool:
        return answers(f"http://127.0.0.1:{self.port}/healthz", timeout=2)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        stop_process(self.proc, timeout=30, sig=sig)


def test_two_operator_processes_one_reconciles(kube: Any, namespace: str, tmp_path: Path) -> None:
    kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    first = Replica(kube, namespace, tmp_path / "first.log")
    eventually(lambda: "acquired lease" in first.text(), 60, "the first replica leads")
    second = Replica(kube, namespace, tmp_path / "second.log")
    try:
        eventually(second.healthy, 60, "the standby answers its liveness probe")
        examples = ROOT / "examples" / "contracts"
        for name in ("00-secrets.yaml", "10-agentdeployment.yaml"):
            kube.kubectl("apply", "-n", namespace, "-f", str(examples / name))

        def children() -> set[str]:
            out = kube.kubectl(
                "get",
                "deployments",
                "-n",
                namespace,
                "-o",
                "name",
                "-l",
                "app.kubernetes.io/managed-by=sleuth-operator",
            ).stdout
            return set(out.split())

        made = {"deployment.apps/contracts-model", "deployment.apps/contracts-agent"}
        # Both children, not the first one seen (the apply of the second may still be on its way).
        eventually(lambda: children() == made, 90, "the leader reconciles the AgentDeployment")
        assert "acquired lease" not in second.text()
        assert "agent_event" not in second.text()  # the standby ran no handler
        # The leader dies without releasing (SIGKILL): the standby takes over and reconciles.
        first.stop(signal.SIGKILL)
        eventually(lambda: "acquired lease" in second.text(), 60, "the standby takes over")
        eventually(second.healthy, 30, "the new leader's kopf serves liveness on the same port")
        victim = sorted(made)[0]
        kube.kubectl("delete", "-n", namespace, victim, "--wait=false")
        eventually(lambda: children() == made, 60, f"{victim} restored: {made}")
    finally:
        first.stop()
        second.stop()
    assert "lease renewal failed" not in second.text()
