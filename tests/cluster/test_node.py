"""The real worker node: pods run for real, Services and DNS work, and `down` leaves nothing.

Beside kwok's simulated nodes, this machine joins the cluster as node ``sleuth-node``
(containerd, runc, a CNI bridge, kubelet, kube-proxy, CoreDNS; tests/cluster/node.py). The
probe image (tests/cluster/images/probe, a static Go HTTP server with no shell) is packed by
oci.py and imported into containerd; pods use it with ``imagePullPolicy: Never``.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from typing import Any

import pytest
from realnode_kit import CLUSTER_DIR, RealNodeCluster, eventually

pytestmark = [pytest.mark.cluster, pytest.mark.realnode, pytest.mark.slow]

H100 = "NVIDIA-H100-80GB-HBM3"


def _probe_pod_spec(real_node: RealNodeCluster, *args: str) -> dict[str, Any]:
    return {
        "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
        "containers": [
            {
                "name": "probe",
                "image": real_node.images["probe"],
                "imagePullPolicy": "Never",
                "args": list(args),
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
            }
        ],
    }


def _deploy_probe(real_node: RealNodeCluster, ns: str, name: str, replicas: int = 1) -> None:
    objects = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": _probe_pod_spec(real_node, "serve", "-addr", ":8080"),
                    },
                },
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "selector": {"app": name},
                    "ports": [{"port": 80, "targetPort": 8080}],
                },
            },
        ],
    }
    real_node.kubectl("apply", "-f", "-", input=json.dumps(objects))


def _wait_available(real_node: RealNodeCluster, ns: str, name: str) -> list[dict[str, Any]]:
    proc = real_node.kubectl(
        "wait",
        "--for=condition=Available",
        f"deployment/{name}",
        "-n",
        ns,
        "--timeout=180s",
        check=False,
        timeout=200,
    )
    if proc.returncode != 0:
        described = real_node.kubectl(
            "describe", "pods", "-n", ns, "-l", f"app={name}", check=False
        )
        raise AssertionError(
            f"deployment {name} not Available:\n{proc.stderr}\n{described.stdout[-4000:]}"
        )
    pods: list[dict[str, Any]] = real_node.get("pods", "-n", ns, "-l", f"app={name}")["items"]
    return pods


def _http_get(url: str, timeout: float = 5) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return str(resp.read().decode())


def test_node_is_real_ready_and_not_taken_by_kwok(real_node: RealNodeCluster) -> None:
    node = real_node.get("node", real_node.node_name)
    assert node["metadata"]["labels"]["sleuth.dev/real-node"] == "true"
    assert "kwok.x-k8s.io/node" not in node["metadata"].get("annotations", {})
    info = node["status"]["nodeInfo"]
    assert info["kubeletVersion"] == "v1.34.4"
    assert info["containerRuntimeVersion"].startswith("containerd://1.")
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses["InternalIP"] == real_node.node_ip
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}
    assert ready["Ready"] == "True"
    assert not node["spec"].get("taints")

    nodes = real_node.get("nodes")["items"]
    h100 = [n for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu.product") == H100]
    cpu = [n for n in nodes if n["metadata"]["name"].startswith("cpu-")]
    assert len(h100) >= 4
    assert cpu
    fake = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}
    assert all(fake in n["spec"]["taints"] for n in cpu)


def _gid(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[2]) for line in f if line.startswith("Gid:"))


def test_network_rule_holds(real_node: RealNodeCluster) -> None:
    assert json.loads(real_node.node("check-network").stdout) == []
    # Every node process runs with the group whose packets to an uplink are dropped.
    procs = real_node.status()["procs"]
    assert set(procs) == {"containerd", "kubelet", "kube-proxy", "coredns"}
    assert {name: _gid(p["pid"]) for name, p in procs.items()} == dict.fromkeys(procs, 64250)
    route = subprocess.run(["ip", "route", "get", "10.0.0.10"], capture_output=True, text=True)
    assert "dev sleuth0" in route.stdout
    mangle = subprocess.run(
        ["iptables-save", "-t", "mangle"], capture_output=True, text=True
    ).stdout
    assert "-A SLEUTH-NODE-GUARD-FORW -o " in mangle
    assert "--gid-owner 64250 -j DROP" in mangle


def test_deployment_service_dns_logs_exec(real_node: RealNodeCluster, node_namespace: str) -> None:
    ns = node_namespace
    _deploy_probe(real_node, ns, "web")
    _deploy_probe(real_node, ns, "client")
    web = _wait_available(real_node, ns, "web")
    client = _wait_available(real_node, ns, "client")
    # CPU pods without a toleration run on the real node, never on a simulated one.
    assert {p["spec"]["nodeName"] for p in web + client} == {real_node.node_name}
    web_pod, client_pod = web[0]["metadata"]["name"], client[0]["metadata"]["name"]
    assert web[0]["status"]["podIP"].startswith("10.244.0.")

    # From the host, through the Service's ClusterIP (kube-proxy, iptables mode).
    ip = real_node.get("service", "web", "-n", ns)["spec"]["clusterIP"]
    body = eventually("the ClusterIP answers from the host", lambda: _http_get(f"http://{ip}/"), 60)
    assert body.strip() == f"probe {web_pod}"

    # From another pod, by DNS name (CoreDNS), through kubectl exec (no shell in the image).
    fqdn = f"web.{ns}.svc.cluster.local"

    def from_client() -> str | None:
        proc = real_node.kubectl(
            "exec", "-n", ns, client_pod, "--", "/probe", "get", f"http://{fqdn}/", check=False
        )
        return proc.stdout if proc.returncode == 0 else None

    assert eventually("web answers the client pod by DNS name", from_client, 60).strip() == (
        f"probe {web_pod}"
    )
    short = real_node.kubectl("exec", "-n", ns, client_pod, "--", "/probe", "get", "http://web/")
    assert short.stdout.strip() == f"probe {web_pod}"  # the search path of the pod's namespace
    kube = real_node.kubectl(
        "exec",
        "-n",
        ns,
        client_pod,
        "--",
        "/probe",
        "resolve",
        "kubernetes.default.svc.cluster.local",
    )
    assert kube.stdout.split() == ["10.0.0.1"]
    # No upstream: a name outside the cluster does not resolve.
    outside = real_node.kubectl(
        "exec", "-n", ns, client_pod, "--", "/probe", "resolve", "example.com", check=False
    )
    assert outside.returncode != 0

    # kubectl logs reaches kubelet (the apiserver's kubelet client certificate).
    logs = real_node.kubectl("logs", "-n", ns, web_pod).stdout
    assert "probe serving on :8080" in logs
    assert "request GET /" in logs


def test_pods_have_no_route_off_the_machine(
    real_node: RealNodeCluster, node_namespace: str
) -> None:
    ns = node_namespace
    _deploy_probe(real_node, ns, "isolated")
    pod = _wait_available(real_node, ns, "isolated")[0]["metadata"]["name"]
    gateway = subprocess.run(
        ["ip", "-4", "route", "show", "default"], capture_output=True, text=True
    ).stdout.split()
    target = gateway[gateway.index("via") + 1] if "via" in gateway else "192.0.2.1"
    # The pod has no default route, so the kernel refuses the connection without sending a packet.
    proc = real_node.kubectl(
        "exec", "-n", ns, pod, "--", "/probe", "get", f"http://{target}:9/", check=False
    )
    assert proc.returncode != 0
    assert "network is unreachable" in proc.stderr


def test_an_image_that_was_not_imported_cannot_be_pulled(
    real_node: RealNodeCluster, node_namespace: str
) -> None:
    """containerd's attempt to reach a registry is refused on this host, before any packet leaves.

    (Its DNS query to the host's resolver is dropped by the guard rule for the node's group.)
    """
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "nopull", "namespace": node_namespace},
        "spec": {"containers": [{"name": "c", "image": "sleuth.invalid/nothing:1"}]},
    }
    real_node.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def pull_error() -> str | None:
        got = real_node.get("pod", "nopull", "-n", node_namespace)
        for status in got["status"].get("containerStatuses", []):
            waiting = status["state"].get("waiting", {})
            if waiting.get("reason") in ("ErrImagePull", "ImagePullBackOff") and waiting.get(
                "message"
            ):
                return str(waiting["message"])
        return None

    message = eventually("the pull fails", pull_error, 90)
    assert "operation not permitted" in message


def test_job_runs_to_completion(real_node: RealNodeCluster, node_namespace: str) -> None:
    ns = node_namespace
    spec = _probe_pod_spec(real_node, "resolve", "kubernetes.default.svc.cluster.local")
    spec["containers"][0].pop("readinessProbe")
    spec["restartPolicy"] = "Never"
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": ns},
        "spec": {"backoffLimit": 0, "template": {"spec": spec}},
    }
    real_node.kubectl("apply", "-f", "-", input=json.dumps(job))
    proc = real_node.kubectl(
        "wait",
        "--for=condition=Complete",
        "job/once",
        "-n",
        ns,
        "--timeout=120s",
        check=False,
        timeout=140,
    )
    assert proc.returncode == 0, real_node.kubectl("describe", "job,pods", "-n", ns).stdout[-4000:]
    done = real_node.get("job", "once", "-n", ns)
    assert done["status"]["succeeded"] == 1
    pod = real_node.get("pods", "-n", ns, "-l", "job-name=once")["items"][0]
    assert pod["spec"]["nodeName"] == real_node.node_name
    assert real_node.kubectl("logs", "-n", ns, "job/once").stdout.split() == ["10.0.0.1"]


def test_gpu_pods_still_land_on_simulated_h100(
    real_node: RealNodeCluster, node_namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm", "namespace": node_namespace},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": H100},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.11.0",
                    "resources": {"limits": {"nvidia.com/gpu": "8"}},
                }
            ],
        },
    }
    real_node.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def running() -> dict[str, Any] | None:
        got = real_node.get("pod", "vllm", "-n", node_namespace)
        return got if got["status"].get("phase") == "Running" else None

    got = eventually("the GPU pod is Running (faked by kwok)", running, 90)
    assert got["spec"]["nodeName"].startswith("gpu-h100-")


def test_down_is_complete_idempotent_and_survives_a_failed_up(real_node: RealNodeCluster) -> None:
    """Runs last in this module: takes the node down and brings it back for later tests."""
    kubeconfig = str(real_node.kubeconfig)
    real_node.node("down")
    assert real_node.leftovers() == []
    assert real_node.get("nodes", "-l", "sleuth.dev/real-node")["items"] == []
    real_node.node("down")  # a second down is a no-op
    assert real_node.leftovers() == []

    # A failed up (after containerd started and images were imported) kept for a look, then down.
    env_fail = {"SLEUTH_NODE_FAIL_AFTER": "containerd", "SLEUTH_NODE_KEEP_FAILED": "1"}
    proc = subprocess.run(
        [
            str(CLUSTER_DIR / "node.sh"),
            "up",
            "--kubeconfig",
            kubeconfig,
            "--cluster",
            real_node.name,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env_fail},
        timeout=600,
    )
    assert proc.returncode != 0
    assert "failing after containerd" in proc.stderr
    assert real_node.leftovers() != []  # a half-made node: containerd, the bridge, chains
    real_node.node("down")
    assert real_node.leftovers() == []

    real_node.node("up", "--kubeconfig", kubeconfig, "--cluster", real_node.name)
    node = real_node.get("node", real_node.node_name)
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
