"""A real KEDA wakes a sleeping model server and puts it back to sleep: KEDA's operator
(``tests/cluster/build.sh keda``, from the Go module proxy) against the test control plane, the
suite's real Prometheus scraping a real ``sleuth agent`` and the scripted model server, the
ScaledObject the operator rendered. A request to the agent while the model server is at zero
replicas is counted in the agent's waiting-for-model series; KEDA reads it through Prometheus and
scales the model Deployment 0 → 1; every request of a bounded load sent meanwhile is answered by the
model (a 200, never a failure);
after the cooldown KEDA scales it back to 0 and the status says so.

The model server's pod is simulated (kwok): the scripted server is started on the address the
agent calls once KEDA has given the Deployment a replica, standing in for that pod. KEDA's metrics
apiserver (1 → N through the HPA) is not run: docs/testing.md says what is and is not proven.
Skipped unless KEDA is built (``tests/cluster/build.sh keda``, 21 minutes cold: not in the default
set-up).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse
from tests.agent.agent_process import AgentProcess
from tests.operator.eval_metrics_kit import get, metered_operator
from tests.operator.prometheus_kit import start_prometheus
from tests.support.paths import EXAMPLES, ROOT
from tests.support.polling import eventually

CACHE = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
VERSIONS = dict(
    line.split("=", 1)
    for line in (ROOT / "tests" / "cluster" / "versions.env").read_text().splitlines()
    if "=" in line and not line.startswith("#")
)
KEDA = CACHE / "bin" / f"keda-{VERSIONS['KEDA_VERSION']}" / "keda-operator"
ANSWER = "the model's own answer, once awake"
LOAD = 6

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.skipif(not KEDA.exists(), reason="KEDA is not built (tests/cluster/build.sh keda)"),
]


@pytest.fixture
def keda(kube: Any, tmp_path: Path) -> Iterator[None]:
    """KEDA's operator on the host, watching the test control plane."""
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(certs / "tls.key"), "-out", str(certs / "tls.crt"),
         "-subj", "/CN=keda-operator"],
        check=True, capture_output=True,
    )  # fmt: skip
    (certs / "ca.crt").write_bytes((certs / "tls.crt").read_bytes())
    kube.kubectl("create", "namespace", "keda", check=False)
    health = free_port()
    env = {
        **os.environ,
        "POD_NAMESPACE": "keda",
        "KEDA_CLUSTER_OBJECT_NAMESPACE": "keda",
        "WATCH_NAMESPACE": "",
    }
    log = (tmp_path / "keda.log").open("wb")
    proc = subprocess.Popen(
        [str(KEDA), "--kubeconfig", str(kube.kubeconfig), "--cert-dir", str(certs),
         "--metrics-bind-address", f"127.0.0.1:{free_port()}",
         "--health-probe-bind-address", f"127.0.0.1:{health}",
         "--metrics-service-bind-address", f"127.0.0.1:{free_port()}"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{health}/healthz", proc, timeout=60, name="keda")
        yield
    finally:
        stop_process(proc)
        log.close()


def _replicas(kube: Any, namespace: str) -> int | None:
    found = get(kube, namespace, "deployment/contracts-model")
    return int(found["spec"]["replicas"]) if found else None


def _asleep(kube: Any, namespace: str) -> str:
    status = get(kube, namespace, "agentdeployment/contracts").get("status") or {}
    cond = next((c for c in status.get("conditions") or [] if c["type"] == "ModelScaledToZero"), {})
    return str(cond.get("status", ""))


def test_keda_wakes_the_model_server_for_a_request_and_puts_it_back_to_sleep(
    kube: Any, namespace: str, crds: None, keda: None, tmp_path: Path
) -> None:
    model_port, agent_metrics = free_port(), None
    doc = yaml.safe_load(
        (ROOT / "examples" / "contracts-autoscaled" / "10-agentdeployment.yaml").read_text()
    )
    doc["spec"]["model"]["autoscaling"] |= {"cooldownSeconds": 5, "wakeWaitSeconds": 50}
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc))
    agent = AgentProcess(
        {
            "model": {
                "endpoint": f"http://127.0.0.1:{model_port}/v1",
                "servedModelName": "scripted",
                "wakeWaitSeconds": 50,
            },
            "requestTimeoutSeconds": 60,
        },
        tmp_path,
        name="contracts",  # its series carry agent="contracts", as the Deployment's pods would
    )
    with agent:
        agent_metrics = agent.url.removeprefix("http://")
        config = {
            "global": {"scrape_interval": "1s"},
            "scrape_configs": [
                {  # as a ServiceMonitor labels them: the pods' namespace and Service
                    "job_name": "agents",
                    "static_configs": [
                        {"targets": [agent_metrics], "labels": {"namespace": namespace}}
                    ],
                },
                {
                    "job_name": "models",
                    "static_configs": [
                        {
                            "targets": [f"127.0.0.1:{model_port}"],
                            "labels": {"namespace": namespace, "service": "contracts-model"},
                        }
                    ],
                },
            ],
        }
        with (
            start_prometheus(tmp_path, config) as prometheus,
            metered_operator(
                kube, namespace, tmp_path / "operator.log", "--prometheus-address", prometheus.url
            ),
        ):
            eventually(lambda: _replicas(kube, namespace) == 0, 120, "KEDA: asleep at zero")
            eventually(lambda: _asleep(kube, namespace) == "True", 60, "ModelScaledToZero=True")

            # A bounded load: LOAD requests at once, all while the model server sleeps.
            answers: list[httpx.Response] = []
            asking = [
                threading.Thread(target=lambda: answers.append(agent.ask("what changed?")))
                for _ in range(LOAD)
            ]
            for thread in asking:
                thread.start()
            eventually(lambda: (_replicas(kube, namespace) or 0) >= 1, 90, "KEDA: woken, 0 -> 1")
            scenario = Scenario(fallback=ScriptedResponse(content=ANSWER))
            with ScriptedProcess(scenario, model_port):  # the pod KEDA's replica stands for
                for thread in asking:
                    thread.join(60)
                    assert not thread.is_alive()
                assert [r.status_code for r in answers] == [200] * LOAD, [r.text for r in answers]
                assert {r.json()["answer"] for r in answers} == {ANSWER}
                # Idle again: the wake signal (held 30 s) and the cooldown pass, then 1 -> 0.
                eventually(lambda: _replicas(kube, namespace) == 0, 120, "KEDA: back to 0")
            eventually(lambda: _asleep(kube, namespace) == "True", 60, "ModelScaledToZero=True")
