"""The control loop against the test control plane: a converged operator writes nothing (after a
restart too), a deleted child of a newly watched kind comes back long before the resync, and
SIGTERM with work in flight ends well inside the chart's grace period."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.process import free_port
from tests.operator.eval_metrics_kit import get, metered_operator
from tests.operator.operator_testkit import OperatorProcess
from tests.support.metrics import Samples, scrape
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

QUIET_SECONDS = 12.0  # more than two resyncs of the test operator (--resync-seconds 5)
CHART_GRACE_SECONDS = 30  # charts/sleuth/values.yaml operator.terminationGracePeriodSeconds


def total(samples: Samples, series: str) -> float:
    return sum(v for (name, _), v in samples.items() if name == series)


def writes(port: int) -> float:
    samples = scrape(port)
    assert samples, "the operator's /metrics does not answer"
    return total(samples, "sleuth_operator_writes_total")


def everything_ready(kube: Any, namespace: str) -> None:
    for what in ("agentdeployment/contracts", "toolbinding --all", "evalschedule --all"):
        kube.kubectl(
            "wait", "-n", namespace, "--for=condition=Ready", *what.split(), "--timeout=180s"
        )


def settled(port: int, seconds: float = 5.0) -> float:
    """The write count once it has stopped moving for ``seconds`` (within the deadline)."""

    def still() -> float | None:
        before = writes(port)
        time.sleep(seconds)
        after = writes(port)
        return after if after == before else None

    found: float = eventually(lambda: (w := still()) is not None and (w,), timeout=120)[0]
    return found


def test_a_converged_operator_writes_nothing_after_a_restart_too(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    with metered_operator(kube, namespace, tmp_path / "first.log") as (first, port):
        everything_ready(kube, namespace)
        converged = settled(port)
        assert converged > 0  # it did write the children and the status
        skipped_before = total(scrape(port), "sleuth_operator_applies_skipped_total")
        time.sleep(QUIET_SECONDS)
        samples = scrape(port)
        assert total(samples, "sleuth_operator_writes_total") == converged
        # the resyncs did visit every object: the applies were considered, and skipped
        assert total(samples, "sleuth_operator_applies_skipped_total") > skipped_before
    first.stop()

    with metered_operator(kube, namespace, tmp_path / "restarted.log") as (restarted, port):
        # every object reconciled at least once by the new process, then two more resyncs
        eventually(
            lambda: total(scrape(port), "sleuth_operator_applies_skipped_total") >= 17,
            what="the restarted operator compared every child",
        )
        time.sleep(QUIET_SECONDS)
        samples = scrape(port)
        written = {
            dict(labels)["verb"] + " " + dict(labels)["kind"]: v
            for (name, labels), v in samples.items()
            if name == "sleuth_operator_writes_total" and v
        }
        assert written == {}, f"the restarted operator wrote: {written}"
        success = sum(
            v
            for (name, labels), v in samples.items()
            if name == "sleuth_operator_reconcile_total" and ("outcome", "success") in labels
        )
        assert success >= 5 * 2  # 5 objects, each reconciled on start and by a resync
    restarted.stop()


def test_a_deleted_role_and_service_account_come_back_long_before_the_resync(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    proc = OperatorProcess(
        kube.kubeconfig, namespace, tmp_path / "operator.log", "--resync-seconds", "600"
    )
    proc.start()
    try:
        kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
        role = eventually(lambda: get(kube, namespace, "role/contracts-weekly-eval"), timeout=180)
        account = get(kube, namespace, "serviceaccount/contracts-weekly-eval")
        assert account, "the EvalSchedule's ServiceAccount is missing"
        kube.kubectl(
            "delete", "-n", namespace, "role/contracts-weekly-eval",
            "serviceaccount/contracts-weekly-eval", "--wait=true",
        )  # fmt: skip
        started = time.monotonic()
        for what, old in (
            ("role/contracts-weekly-eval", role),
            ("serviceaccount/contracts-weekly-eval", account),
        ):
            back = eventually(
                lambda what=what, old=old: (
                    (o := get(kube, namespace, what))
                    and o["metadata"]["uid"] != old["metadata"]["uid"]
                    and o
                ),
                timeout=60,
                what=f"{what} put back",
            )
            assert back["metadata"]["ownerReferences"][0]["kind"] == "EvalSchedule"
        assert time.monotonic() - started < 60  # the resync is 600 s away
    except BaseException:
        print(f"--- operator log ---\n{proc.text()[-8000:]}")
        raise
    finally:
        proc.stop()


def many_agents(count: int) -> str:
    docs = [
        {
            "apiVersion": "sleuth.dev/v1alpha1",
            "kind": "AgentDeployment",
            "metadata": {"name": f"bot-{i:02d}"},
            "spec": {
                "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}
            },
        }
        for i in range(count)
    ]
    return yaml.safe_dump_all(docs)


def test_sigterm_with_work_in_flight_exits_well_inside_the_grace_period(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    port = free_port()
    proc = OperatorProcess(
        kube.kubeconfig, namespace, tmp_path / "operator.log",
        "--metrics-port", str(port), "--workers", "2", "--shutdown-seconds", "5",
    )  # fmt: skip
    proc.start()
    try:
        kube.kubectl("apply", "-n", namespace, "-f", "-", input=many_agents(24))
        # SIGTERM while the first reconciles run and most keys still wait
        eventually(
            lambda: total(scrape(port), "sleuth_operator_reconcile_total") >= 1,
            what="the first reconcile",
            interval=0.1,
        )
        assert proc.proc is not None
        started = time.monotonic()
        proc.proc.send_signal(signal.SIGTERM)
        code = proc.proc.wait(timeout=CHART_GRACE_SECONDS)
        took = time.monotonic() - started
    except BaseException:
        print(f"--- operator log ---\n{proc.text()[-8000:]}")
        raise
    finally:
        proc.stop(kill=True)
    assert took < 5 + 10, f"exit took {took:.1f} s"
    assert code == 0, proc.text()[-4000:]
