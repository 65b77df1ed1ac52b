"""A real KEDA on the host against a test control plane: its operator (0 ↔ 1, the ScaledObjects'
HPAs) and its metrics apiserver (``cmd/adapter``: ``external.metrics.k8s.io``, which those HPAs
read to scale 1 → N), both built from the Go module proxy (``tests/cluster/build.sh keda``).

How the pieces meet, with no pod and no kube-proxy path:

- the operator serves KEDA's gRPC metrics service on a loopback port; the adapter calls it there
  with mutual TLS (a CA made here, one certificate for both ends, its names the loopback ones);
- the adapter serves ``external.metrics.k8s.io`` on another loopback port, and an ``APIService``
  ``v1beta1.external.metrics.k8s.io`` sends kube-apiserver's aggregation layer there through a
  Service of type ExternalName ``localhost`` (kube-apiserver runs on this host too; its
  aggregator resolves an ExternalName Service to that name and the APIService's port). The
  aggregator checks the adapter's certificate against the APIService's ``caBundle`` for the name
  ``<service>.<namespace>.svc``; the adapter trusts the aggregator's client certificate through
  the front-proxy CA that tests/cluster/up.sh gives every cluster (``--requestheader-*``).

The APIService is cluster-wide: one KEDA per cluster at a time (each pytest-xdist worker has a
cluster of its own). It is deleted first on the way out, so that an adapter that is gone never
leaves the cluster's discovery (and with it namespace deletion) failing.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import free_port, stop_process, wait_healthy
from tests.agent.agent_process import AgentProcess
from tests.operator.eval_metrics_kit import metered_operator
from tests.operator.prometheus_kit import start_prometheus
from tests.support.paths import EXAMPLES, ROOT
from tests.support.polling import eventually

CACHE = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
VERSIONS = dict(
    line.split("=", 1)
    for line in (ROOT / "tests" / "cluster" / "versions.env").read_text().splitlines()
    if "=" in line and not line.startswith("#")
)
BIN = CACHE / "bin" / f"keda-{VERSIONS['KEDA_VERSION']}"
KEDA_OPERATOR = BIN / "keda-operator"
KEDA_ADAPTER = BIN / "keda-adapter"
NAMESPACE = "keda"
SERVICE = "keda-metrics-apiserver"
API_SERVICE = "v1beta1.external.metrics.k8s.io"


@dataclass
class Autoscaled:
    """The autoscaled example running: its agent, the model server's port (nothing listens there
    until a test starts a stand-in), and Prometheus' URL."""

    agent: AgentProcess
    model_port: int
    prometheus: str


@dataclass
class Keda:
    """The running KEDA: where its logs are, and the external metrics it serves."""

    kube: Any
    logs: dict[str, Path]

    def text(self) -> str:
        return "".join(
            f"--- {name} log ---\n{path.read_text(errors='replace')[-6000:]}\n"
            for name, path in self.logs.items()
        )

    def hpa(self, namespace: str, scaled_object: str) -> dict[str, Any]:
        """The HorizontalPodAutoscaler KEDA made for a ScaledObject ({} when none yet)."""
        found = self.kube.kubectl(
            "get", "hpa", f"keda-hpa-{scaled_object}", "-n", namespace, "-o", "json", check=False
        )
        return json.loads(found.stdout) if found.returncode == 0 else {}


def _certificates(folder: Path) -> bytes:
    """ca.crt, tls.crt and tls.key in ``folder`` (KEDA's file names); returns the CA."""
    folder.mkdir(parents=True, exist_ok=True)
    names = f"DNS:localhost,DNS:keda-operator,DNS:{SERVICE}.{NAMESPACE}.svc,IP:127.0.0.1"
    (folder / "leaf.ext").write_text(
        f"subjectAltName={names}\nextendedKeyUsage=serverAuth,clientAuth\n"
    )
    for args in (
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=keda-test-ca",
         "-keyout", "ca.key", "-out", "ca.crt"],
        ["req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=keda", "-keyout", "tls.key",
         "-out", "tls.csr"],
        ["x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-days", "1", "-extfile", "leaf.ext", "-out", "tls.crt"],
    ):  # fmt: skip
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)
    return (folder / "ca.crt").read_bytes()


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)


def _aggregation(kube: Any, port: int, ca: bytes) -> list[dict[str, Any]]:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": NAMESPACE},
        "spec": {"type": "ExternalName", "externalName": "localhost"},
    }
    api_service = {
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": API_SERVICE},
        "spec": {
            "group": "external.metrics.k8s.io",
            "version": "v1beta1",
            "service": {"name": SERVICE, "namespace": NAMESPACE, "port": port},
            "caBundle": base64.b64encode(ca).decode(),
            "groupPriorityMinimum": 100,
            "versionPriority": 100,
        },
    }
    return [service, api_service]


def _available(kube: Any) -> bool:
    found = kube.kubectl("get", "apiservice", API_SERVICE, "-o", "json", check=False)
    if found.returncode != 0:
        return False
    conditions = json.loads(found.stdout).get("status", {}).get("conditions") or []
    return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)


def _aggregation_configured(kube: Any) -> bool:
    found = kube.kubectl(
        "get", "configmap", "extension-apiserver-authentication", "-n", "kube-system",
        "-o", "json", check=False,
    )  # fmt: skip
    return (
        found.returncode == 0 and "requestheader-client-ca-file" in json.loads(found.stdout)["data"]
    )


@contextmanager
def running_keda(kube: Any, workdir: Path, watch_namespace: str) -> Iterator[Keda]:
    """KEDA's operator and metrics apiserver on the host, watching ``watch_namespace``, with the
    ``external.metrics.k8s.io`` APIService available; everything removed afterwards."""
    assert _aggregation_configured(kube), (
        "kube-apiserver runs without the aggregation layer's --requestheader-* flags: start the "
        "cluster with tests/cluster/up.sh"
    )
    certs = workdir / "keda-certs"
    ca = _certificates(certs)
    kube.kubectl("create", "namespace", NAMESPACE, check=False)
    env = {
        **os.environ,
        "KUBECONFIG": str(kube.kubeconfig),
        "POD_NAMESPACE": NAMESPACE,
        "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE,
        "WATCH_NAMESPACE": watch_namespace,
    }
    grpc, health, secure = free_port(), free_port(), free_port()
    logs = {"keda-operator": workdir / "keda-operator.log", "keda-adapter": workdir / "keda.log"}
    keda = Keda(kube, logs)
    with ExitStack() as stack:
        operator = _start(
            [str(KEDA_OPERATOR), "--kubeconfig", str(kube.kubeconfig), "--cert-dir", str(certs),
             "--metrics-bind-address", f"127.0.0.1:{free_port()}",
             "--health-probe-bind-address", f"127.0.0.1:{health}",
             "--metrics-service-bind-address", f"127.0.0.1:{grpc}"],
            env, logs["keda-operator"],
        )  # fmt: skip
        stack.callback(stop_process, operator)
        # runs before the operator stops (a stack unwinds last in, first out)
        stack.callback(_release_scaled_objects, kube, watch_namespace)
        wait_healthy(f"http://127.0.0.1:{health}/healthz", operator, timeout=90, name="keda")
        kubeconfig = str(kube.kubeconfig)
        adapter = _start(
            [str(KEDA_ADAPTER), "--kubeconfig", kubeconfig, "--lister-kubeconfig", kubeconfig,
             "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
             "--bind-address", "127.0.0.1", "--secure-port", str(secure),
             "--cert-dir", str(certs), "--tls-cert-file", str(certs / "tls.crt"),
             "--tls-private-key-file", str(certs / "tls.key"),
             "--metrics-service-address", f"127.0.0.1:{grpc}",
             "--metrics-service-grpc-authority", "localhost",
             # its own /metrics (the flag binds every interface; nothing scrapes it here)
             "--port", str(free_port())],
            env, logs["keda-adapter"],
        )  # fmt: skip
        stack.callback(stop_process, adapter)
        stack.callback(
            kube.kubectl, "delete", "apiservice", API_SERVICE, "--ignore-not-found", check=False
        )
        docs = _aggregation(kube, secure, ca)
        kube.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
        try:
            eventually(lambda: adapter.poll() is None and _available(kube), 120, API_SERVICE)
            path = "/apis/external.metrics.k8s.io/v1beta1"
            eventually(
                lambda: kube.kubectl("get", "--raw", path, check=False).returncode == 0,
                60,
                "the external metrics API answers through kube-apiserver",
            )
        except AssertionError:
            print(keda.text())
            raise
        yield keda


def _release_scaled_objects(kube: Any, namespace: str) -> None:
    """KEDA's operator puts its finalizer on every ScaledObject it reconciles: they are deleted
    while it still runs, so that deleting their namespace later does not wait forever for a KEDA
    that is gone (it would leave the namespace Terminating for every later test of the cluster).
    What is still there after a minute loses the finalizer."""
    kube.kubectl("delete", "scaledobjects", "--all", "-n", namespace, "--timeout=60s", check=False)
    left = kube.kubectl("get", "scaledobjects", "-n", namespace, "-o", "name", check=False)
    for name in left.stdout.split():
        patch = '{"metadata":{"finalizers":null}}'
        kube.kubectl("patch", name, "-n", namespace, "--type=merge", "-p", patch, check=False)


@contextmanager
def autoscaled_contracts(
    kube: Any, namespace: str, tmp_path: Path, autoscaling: dict[str, int]
) -> Iterator[Autoscaled]:
    """The autoscaled example with ``autoscaling`` merged into its model's, the operator, a real
    ``sleuth agent`` (named as its pods would be) calling the model server's port, and Prometheus
    scraping both as a ServiceMonitor labels them."""
    model_port = free_port()
    doc = yaml.safe_load(
        (ROOT / "examples" / "contracts-autoscaled" / "10-agentdeployment.yaml").read_text()
    )
    doc["spec"]["model"]["autoscaling"] |= autoscaling
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc))
    agent = AgentProcess(
        {
            "model": {
                "endpoint": f"http://127.0.0.1:{model_port}/v1",
                "servedModelName": "scripted",
                "wakeWaitSeconds": autoscaling["wakeWaitSeconds"],
            },
            "requestTimeoutSeconds": 90,
        },
        tmp_path,
        name="contracts",  # its series carry agent="contracts", as the Deployment's pods would
    )
    with agent:
        config = {
            "global": {"scrape_interval": "1s"},
            "scrape_configs": [
                {  # as a ServiceMonitor labels them: the pods' namespace and Service
                    "job_name": "agents",
                    "static_configs": [
                        {
                            "targets": [agent.url.removeprefix("http://")],
                            "labels": {"namespace": namespace},
                        }
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
            yield Autoscaled(agent, model_port, prometheus.url)


__all__ = [
    "API_SERVICE",
    "KEDA_ADAPTER",
    "KEDA_OPERATOR",
    "Autoscaled",
    "Keda",
    "autoscaled_contracts",
    "running_keda",
]
