"""A real KEDA scales the model server with demand: KEDA's operator and metrics apiserver
(``tests/cluster/build.sh keda``, from the Go module proxy; tests/operator/keda_kit.py) against the
test control plane, the suite's real Prometheus scraping a real ``sleuth agent`` and the scripted
model server, the ScaledObject the operator rendered.

- **0 → 1 → 0**: a request to the agent while the model server is at zero replicas is counted in
  the agent's waiting-for-model series; KEDA's operator reads it through Prometheus and scales the
  model Deployment 0 → 1; every request of a bounded load sent meanwhile is answered by the model
  (a 200, never a failure); after the cooldown KEDA scales it back to 0 and the status says so.
- **1 → N → 1**: a bounded load (a count of requests, each with a timeout) queues requests in the
  scripted server (``--max-num-seqs 1``), whose ``vllm:num_requests_waiting`` rises; the HPA that
  KEDA made reads it through ``external.metrics.k8s.io`` (KEDA's metrics apiserver behind
  kube-apiserver's aggregation layer) and scales the Deployment out to N ≥ 2; no request fails;
  once the queue is empty it comes back to 1 after ``cooldownSeconds``.

The model server's pods are simulated (kwok): the scripted server on the address the agent calls
stands in for them (one process for every replica), so what is proven is the scaling chain —
series, Prometheus, KEDA, HPA, Deployment — not the spreading of requests over replicas
(tests/e2e/test_autoscaling_on_a_real_node.py runs real pods). Skipped unless KEDA is built
(``make keda``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse
from tests.operator.eval_metrics_kit import get
from tests.operator.keda_kit import (
    KEDA_ADAPTER,
    KEDA_OPERATOR,
    Keda,
    autoscaled_contracts,
    running_keda,
)
from tests.support.polling import eventually

ANSWER = "the model's own answer, once awake"
LOAD = 6
# 1 -> N: BURST requests, CONCURRENT at a time, each SLOW_MS long with one served at once: about
# 7 wait while the burst lasts (~40 s, more than two of the HPA's 15 s periods), 3.5 replicas'
# worth at 2 waiting per replica (maxReplicas 3).
BURST, CONCURRENT, SLOW_MS = 28, 8, 1400

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (KEDA_OPERATOR.exists() and KEDA_ADAPTER.exists()),
        reason="KEDA is not built (make keda)",
    ),
]


@pytest.fixture
def keda(
    kube: Any, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Keda]:
    """KEDA's operator and metrics apiserver on the host, watching the test's namespace."""
    with running_keda(kube, tmp_path, namespace) as running:
        yield running
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(running.text())


def _replicas(kube: Any, namespace: str) -> int | None:
    found = get(kube, namespace, "deployment/contracts-model")
    return int(found["spec"].get("replicas", 1)) if found else None


def _asleep(kube: Any, namespace: str) -> str:
    status = get(kube, namespace, "agentdeployment/contracts").get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "ModelScaledToZero"), {})
    return str(cond.get("status", ""))


def test_keda_wakes_the_model_server_for_a_request_and_puts_it_back_to_sleep(
    kube: Any, namespace: str, crds: None, keda: Keda, tmp_path: Path
) -> None:
    autoscaling = {"cooldownSeconds": 5, "wakeWaitSeconds": 50}
    with autoscaled_contracts(kube, namespace, tmp_path, autoscaling) as running:
        eventually(lambda: _replicas(kube, namespace) == 0, 120, "KEDA: asleep at zero")
        eventually(lambda: _asleep(kube, namespace) == "True", 60, "ModelScaledToZero=True")

        # A bounded load: LOAD requests at once, all while the model server sleeps.
        answers: list[httpx.Response] = []
        asking = [
            threading.Thread(target=lambda: answers.append(running.agent.ask("what changed?")))
            for _ in range(LOAD)
        ]
        for thread in asking:
            thread.start()
        eventually(lambda: (_replicas(kube, namespace) or 0) >= 1, 90, "KEDA: woken, 0 -> 1")
        scenario = Scenario(fallback=ScriptedResponse(content=ANSWER))
        with ScriptedProcess(scenario, running.model_port):  # the pod KEDA's replica stands for
            for thread in asking:
                thread.join(60)
                assert not thread.is_alive()
            assert [r.status_code for r in answers] == [200] * LOAD, [r.text for r in answers]
            assert {r.json()["answer"] for r in answers} == {ANSWER}
            # Idle again: the wake signal (held 30 s) and the cooldown pass, then 1 -> 0.
            eventually(lambda: _replicas(kube, namespace) == 0, 120, "KEDA: back to 0")
        eventually(lambda: _asleep(kube, namespace) == "True", 60, "ModelScaledToZero=True")


def test_a_bounded_load_scales_the_model_server_out_through_the_hpa_and_back(
    kube: Any, namespace: str, crds: None, keda: Keda, tmp_path: Path
) -> None:
    autoscaling = {
        "minReplicas": 1,
        "maxReplicas": 3,
        "targetWaitingRequests": 2,
        "cooldownSeconds": 10,
        "wakeWaitSeconds": 50,
    }
    slow = Scenario(fallback=ScriptedResponse(content=ANSWER, delay_ms=SLOW_MS))
    with (
        autoscaled_contracts(kube, namespace, tmp_path, autoscaling) as running,
        ScriptedProcess(slow, running.model_port, "--max-num-seqs", "1"),
    ):
        eventually(lambda: keda.hpa(namespace, "contracts-model"), 120, "KEDA made the HPA")
        eventually(lambda: _replicas(kube, namespace) == 1, 60, "one replica before the load")

        # Replicas over time, read while the load runs (bounded by `done` and a deadline).
        timeline: list[tuple[float, int | None]] = []
        done = threading.Event()
        t0 = time.monotonic()

        def watch() -> None:
            while not done.is_set() and time.monotonic() - t0 < 300:
                timeline.append((round(time.monotonic() - t0, 1), _replicas(kube, namespace)))
                done.wait(1)

        # The load: BURST requests, CONCURRENT at a time, each with the client's timeout.
        answers: list[httpx.Response] = []
        sent = iter(range(BURST))
        claim = threading.Lock()

        def ask() -> None:
            while True:
                with claim:
                    if next(sent, None) is None:
                        return
                url = f"{running.agent.url}/v1/query"
                answers.append(httpx.post(url, json={"question": "q?"}, timeout=120))

        watcher = threading.Thread(target=watch)
        watcher.start()
        askers = [threading.Thread(target=ask) for _ in range(CONCURRENT)]
        for thread in askers:
            thread.start()
        for thread in askers:
            thread.join(240)
        assert not any(thread.is_alive() for thread in askers), "the load did not end"
        assert [r.status_code for r in answers] == [200] * BURST, [r.text for r in answers]
        assert {r.json()["answer"] for r in answers} == {ANSWER}  # the model's, never the router's
        peak = max(r or 0 for _, r in timeline)
        try:
            assert peak >= 2, f"never scaled out: {timeline}"
            # The queue is empty: after cooldownSeconds (the HPA's window), back to 1, not 0.
            eventually(lambda: _replicas(kube, namespace) == 1, 120, "the HPA: back to 1")
        finally:
            done.set()
            watcher.join(10)
        timeline.append((round(time.monotonic() - t0, 1), _replicas(kube, namespace)))
        print(f"replicas over time (s, replicas): {timeline}")
        hpa = keda.hpa(namespace, "contracts-model")
        assert hpa["spec"]["maxReplicas"] == 3
        metric = hpa["spec"]["metrics"][0]
        assert metric["type"] == "External", metric
