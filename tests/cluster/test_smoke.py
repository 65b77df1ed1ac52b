"""The simulated cluster is real enough for an operator: scheduling, controllers, GC, CEL.

These run against the real kube-apiserver, kube-controller-manager and kube-scheduler, with kwok
playing the kubelets of simulated H100 and CPU nodes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Any

import pytest

pytestmark = pytest.mark.cluster

H100 = "NVIDIA-H100-80GB-HBM3"


def _get(kube: Any, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kube.kubectl("get", *args, "-o", "json").stdout)
    return out


def _wait_for(predicate: Any, timeout: float = 60, interval: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def _gpu_pod_spec(gpus: int) -> dict[str, Any]:
    return {
        "nodeSelector": {"nvidia.com/gpu.product": H100},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.11.0",
                "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
            }
        ],
    }


def test_nodes_are_simulated_h100_and_cpu(kube: Any) -> None:
    nodes = _get(kube, "nodes")["items"]
    gpu = [n for n in nodes if n["metadata"]["labels"].get("nvidia.com/gpu.product") == H100]
    cpu = [n for n in nodes if "nvidia.com/gpu.product" not in n["metadata"]["labels"]]
    assert len(gpu) >= 4
    assert len(cpu) >= 2
    for n in gpu:
        assert n["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in n["spec"][
            "taints"
        ]
    ready = [c for n in nodes for c in n["status"]["conditions"] if c["type"] == "Ready"]
    assert all(c["status"] == "True" for c in ready)


def test_gpu_deployment_lands_on_h100_and_becomes_available(kube: Any, namespace: str) -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm", "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "vllm"}},
            "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": _gpu_pod_spec(4)},
        },
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(deploy))
    kube.kubectl(
        "wait", "--for=condition=Available", "deployment/vllm", "-n", namespace, "--timeout=90s"
    )
    pods = _get(kube, "pods", "-n", namespace, "-l", "app=vllm")["items"]
    assert len(pods) == 1
    node = _get(kube, "node", pods[0]["spec"]["nodeName"])
    assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == H100
    assert pods[0]["status"]["phase"] == "Running"


def test_pod_asking_for_nine_gpus_stays_pending_unschedulable(kube: Any, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big", "namespace": namespace},
        "spec": _gpu_pod_spec(9),
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def unschedulable() -> dict[str, Any] | None:
        status = _get(kube, "pod", "too-big", "-n", namespace)["status"]
        for c in status.get("conditions", []):
            if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                return {"phase": status["phase"], **c}
        return None

    cond = _wait_for(unschedulable)
    assert cond["phase"] == "Pending"
    assert cond["status"] == "False"
    assert "nvidia.com/gpu" in cond["message"]


def test_cronjob_makes_a_job_that_completes(kube: Any, namespace: str) -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "eval", "namespace": namespace},
        "spec": {
            "schedule": "0 3 * * *",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "eval", "image": "busybox:1.36"}],
                        }
                    }
                }
            },
        },
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(cron))
    kube.kubectl("create", "job", "eval-now", "--from=cronjob/eval", "-n", namespace)
    kube.kubectl(
        "wait", "--for=condition=Complete", "job/eval-now", "-n", namespace, "--timeout=90s"
    )
    job = _get(kube, "job", "eval-now", "-n", namespace)
    assert job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert job["status"]["succeeded"] == 1


def test_deleting_owner_garbage_collects_owned_configmap(kube: Any, namespace: str) -> None:
    kube.kubectl("create", "configmap", "owner", "-n", namespace)
    owner = _get(kube, "configmap", "owner", "-n", namespace)
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "child",
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ],
        },
    }
    kube.kubectl("apply", "-f", "-", input=json.dumps(child))
    kube.kubectl("delete", "configmap", "owner", "-n", namespace)

    def gone() -> bool:
        proc = kube.kubectl("get", "configmap", "child", "-n", namespace, check=False)
        return proc.returncode != 0 and "NotFound" in proc.stderr

    _wait_for(gone)


DIVISIBLE = "gpuCount must be divisible by tensorParallelSize"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.smoke.sleuth.dev"},
    "spec": {
        "group": "smoke.sleuth.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-validations": [
                                    {
                                        "rule": "self.gpuCount % self.tensorParallelSize == 0",
                                        "message": DIVISIBLE,
                                        "fieldPath": ".gpuCount",
                                    }
                                ],
                                "properties": {
                                    "gpuCount": {"type": "integer", "minimum": 1},
                                    "tensorParallelSize": {"type": "integer", "minimum": 1},
                                },
                                "required": ["gpuCount", "tensorParallelSize"],
                            }
                        },
                    }
                },
            }
        ],
    },
}


def test_crd_with_cel_rule_rejects_invalid_object_naming_the_field(
    kube: Any, namespace: str
) -> None:
    kube.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    kube.kubectl(
        "wait", "--for=condition=Established", "crd/widgets.smoke.sleuth.dev", "--timeout=30s"
    )

    def widget(gpus: int, tp: int) -> str:
        return json.dumps(
            {
                "apiVersion": "smoke.sleuth.dev/v1",
                "kind": "Widget",
                "metadata": {"name": f"w-{gpus}-{tp}", "namespace": namespace},
                "spec": {"gpuCount": gpus, "tensorParallelSize": tp},
            }
        )

    # Discovery of a new group can lag the Established condition by a moment.
    _wait_for(
        lambda: kube.kubectl("apply", "-f", "-", input=widget(4, 2), check=False).returncode == 0
    )
    bad = kube.kubectl("apply", "-f", "-", input=widget(3, 2), check=False)
    assert bad.returncode != 0
    assert "spec.gpuCount" in bad.stderr
    assert DIVISIBLE in bad.stderr
    schema_bad = kube.kubectl("apply", "-f", "-", input=widget(0, 1), check=False)
    assert schema_bad.returncode != 0
    assert "spec.gpuCount" in schema_bad.stderr


def test_cached_tools_report_pinned_versions(kube: Any) -> None:
    from pathlib import Path

    versions = dict(
        line.split("=", 1)
        for line in (Path(__file__).parent / "versions.env").read_text().splitlines()
        if line and not line.startswith("#")
    )
    kubectl = kube.kubectl("version", "--client", "-o", "json").stdout
    assert json.loads(kubectl)["clientVersion"]["gitVersion"] == versions["KUBERNETES_VERSION"]
    server = json.loads(kube.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert server["gitVersion"] == versions["KUBERNETES_VERSION"]
    assert kube.helm("version", "--short").stdout.startswith(versions["HELM_VERSION"])
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian's prometheus package) is not on PATH"
    out = subprocess.run([promtool, "--version"], capture_output=True, text=True, check=True)
    assert "promtool, version" in out.stdout + out.stderr
