"""Scale to zero and back with real pods: the model server sleeps at zero, a bounded load through
the agent's Service wakes it, every request is answered by the model, and it goes back to sleep.

On the real node (kubelet, containerd, runc on this machine): the operator (a host process) renders
the autoscaled example; its agent pod runs the testkit image, and its model Deployment runs the
same image with ``sleuth scripted-model`` as entrypoint (autoscaling_kit.with_entrypoint), which
takes the vLLM command line the operator renders — the only stand-in. The real node advertises
``nvidia.com/gpu`` for the run (autoscaling_kit.gpu_node), so the model server's pods, GPU request,
H100 node selector and all, land there. KEDA's operator and metrics apiserver run on the host
(tests/operator/keda_kit.py), so does Prometheus, which scrapes the pods behind the agent's and
the model's Services, labelled as a ServiceMonitor labels them.

The requests go from the host to the agent's ClusterIP Service (kube-proxy) with the portal's
ServiceAccount token (the example admits it); the agent calls the model's Service, which has no
endpoint while it sleeps (refused), waits, counted in the series KEDA wakes it on, and gets the
model's answer once KEDA's replica is Ready. Then, idle, KEDA puts it back to zero.
"""

from __future__ import annotations

import copy
import json
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscaling_kit import gpu_node, scraped_endpoints, with_entrypoint
from platform_kit import SMALL_NODE, build_image, eventually

from tests.operator.keda_kit import KEDA_ADAPTER, KEDA_OPERATOR, running_keda
from tests.operator.operator_testkit import OperatorProcess
from tests.operator.prometheus_kit import start_prometheus
from tests.support.paths import EXAMPLES, ROOT

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.realnode,
    pytest.mark.slow,
    pytest.mark.skipif(
        not (KEDA_OPERATOR.exists() and KEDA_ADAPTER.exists()),
        reason="KEDA is not built (make keda)",
    ),
]

LOAD = 4
MODEL_POD = {"requests": {"cpu": "50m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}}


def _agentdeployment(namespace: str) -> dict[str, Any]:
    path = ROOT / "examples" / "contracts-autoscaled" / "10-agentdeployment.yaml"
    doc: dict[str, Any] = copy.deepcopy(yaml.safe_load(path.read_text()))
    doc["metadata"]["namespace"] = namespace
    model = doc["spec"]["model"]
    # one GPU each, and a pod the real node's two cores can hold
    model.update(tensorParallelSize=1, gpu={"count": 1, "product": model["gpu"]["product"]})
    model["resources"] = MODEL_POD
    model.pop("cache")
    model["autoscaling"] |= {"maxReplicas": 2, "cooldownSeconds": 10, "wakeWaitSeconds": 50}
    agent = doc["spec"]["agent"]
    agent.pop("autoscaling")  # one agent pod: the real node has two cores
    agent["replicas"] = 1
    agent["resources"] = SMALL_NODE
    return doc


def _replicas(cluster: Any, namespace: str) -> int:
    found = cluster.get("deployment", "contracts-model", "-n", namespace)
    return int(found["spec"].get("replicas", 1))


def _ask(url: str, token: str) -> tuple[int, str]:
    body = json.dumps({"question": "what changed in the contracts?"}).encode()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            return response.status, str(json.loads(response.read())["answer"])
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")[:300]
    except OSError as err:
        return 0, repr(err)


def test_a_bounded_load_through_the_agent_service_wakes_real_model_pods_and_they_sleep_again(
    real_node: Any, node_namespace: str, tmp_path: Path
) -> None:
    cluster, ns = real_node, node_namespace
    archive, testkit = build_image("testkit")
    cluster.import_image(archive)
    stand_in = testkit.replace("/testkit:", "/scripted-vllm:")
    entrypoint = ["sleuth", "scripted-model"]
    cluster.import_image(with_entrypoint(archive, tmp_path / "stand-in.tar", stand_in, entrypoint))
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
    cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    "crd/agentdeployments.sleuth.dev")  # fmt: skip
    cluster.kubectl("apply", "-n", ns, "-f", str(EXAMPLES / "00-secrets.yaml"))
    cluster.kubectl("create", "serviceaccount", "contracts-portal", "-n", ns)
    with (
        gpu_node(cluster),
        scraped_endpoints(cluster, ns, tmp_path) as config,
        start_prometheus(tmp_path, config) as prometheus,
        running_keda(cluster, tmp_path, ns) as keda,
    ):
        operator = OperatorProcess(
            cluster.kubeconfig, ns, tmp_path / "operator.log",
            "--image", testkit, "--model-image", stand_in, "--image-pull-policy", "Never",
            "--prometheus-address", prometheus.url,
        )  # fmt: skip
        operator.start()
        try:
            _round_trip(cluster, ns)
        except BaseException:
            print(keda.text())
            print(f"--- operator log ---\n{operator.text()[-6000:]}")
            pods = cluster.kubectl("get", "pods", "-n", ns, "-o", "wide", check=False)
            print(f"--- pods ---\n{pods.stdout}")
            raise
        finally:
            operator.stop()


def _round_trip(cluster: Any, ns: str) -> None:
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(_agentdeployment(ns)))
    eventually(
        "the operator made the agent's Deployment",
        lambda: (
            cluster.kubectl("get", "deployment/contracts-agent", "-n", ns, check=False).returncode
            == 0
        ),
        timeout=120,
    )
    cluster.kubectl("rollout", "status", "deployment/contracts-agent", "-n", ns,
                    "--timeout=300s", timeout=330)  # fmt: skip
    eventually("KEDA: asleep at zero", lambda: _replicas(cluster, ns) == 0, timeout=180)
    audience = cluster.get("agentdeployment", "contracts", "-n", ns)["status"]["agentAudience"]
    token = cluster.kubectl(
        "create", "token", "contracts-portal", "-n", ns, "--audience", audience
    ).stdout.strip()
    svc = cluster.get("service", "contracts-agent", "-n", ns)
    port = next(p["port"] for p in svc["spec"]["ports"] if p.get("name") == "http")
    url = f"http://{svc['spec']['clusterIP']}:{port}/v1/query"

    # A bounded load: LOAD requests at once through the agent's Service, the model asleep.
    t0 = time.monotonic()
    answers: list[tuple[int, str]] = []
    asking = [
        threading.Thread(target=lambda: answers.append(_ask(url, token))) for _ in range(LOAD)
    ]
    for thread in asking:
        thread.start()
    woke = eventually("KEDA: woken, 0 -> 1", lambda: _replicas(cluster, ns) >= 1, timeout=90)
    assert woke
    for thread in asking:
        thread.join(120)
    assert not any(thread.is_alive() for thread in asking)
    answered = time.monotonic() - t0
    assert [status for status, _ in answers] == [200] * LOAD, answers
    for _, answer in answers:
        assert "router" not in answer, answer  # the model's answer, not the degraded one
    pods = cluster.get("pods", "-n", ns, "-l", "app.kubernetes.io/component=model")["items"]
    assert pods
    assert {p["spec"]["nodeName"] for p in pods} == {cluster.node_name}, pods
    print(f"{LOAD} requests answered by the woken model pod within {answered:.1f} s")
    # Idle again: the wake signal (held 30 s) and the cooldown pass, then 1 -> 0.
    eventually("KEDA: back to 0", lambda: _replicas(cluster, ns) == 0, timeout=150)
    eventually(
        "the model pod is gone",
        lambda: (
            not cluster.get("pods", "-n", ns, "-l", "app.kubernetes.io/component=model")["items"]
        ),
        timeout=120,
    )
