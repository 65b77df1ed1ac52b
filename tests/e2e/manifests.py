"""The stand-ins' manifests: PostgreSQL, SearxNG and the model server in pods of the testkit
image, the Qdrant store (a hostPath PersistentVolume on the real node, its claim, the ingest
Job), and the trace backend (Jaeger, the binary the tests build, in a pod). Pods run as uid
65532 with a read-only root and a writable /tmp, like sleuth's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from platform_kit import PODS, READER_PASSWORD, ROOT, seed_scenario

from sleuth.tools.sample.contracts import SEED_QUESTION


def _configmap(name: str, namespace: str, files: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": files,
    }


def _pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container(name: str, image: str, args: list[str], port: int) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "Never",
        "args": args,
        "ports": [{"name": "tcp", "containerPort": port}],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }


def _workload(
    name: str, namespace: str, container: dict[str, Any], volumes: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    labels = {"app": name}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "securityContext": _pod_security(),
                        "automountServiceAccountToken": False,
                        "containers": [container],
                        "volumes": [{"name": "tmp", "emptyDir": {}}, *volumes],
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "selector": labels,
                "ports": [{"name": "tcp", "port": container["ports"][0]["containerPort"]}],
            },
        },
    ]


def backends(testkit: str) -> list[dict[str, Any]]:
    """What the example expects to exist already: PostgreSQL (data), SearxNG (search), the model
    server (models)."""
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        for ns in ("data", "search", "models")
    ]
    docs.append(
        _configmap(
            "postgres-scripts",
            "data",
            {
                "postgres.py": (PODS / "postgres.py").read_text(),
                "readonly-role.sql": (ROOT / "docs" / "sql" / "readonly-role.sql").read_text(),
            },
        )
    )
    pg = _container("postgres", testkit, [], 5432)
    pg["command"] = ["python", "/scripts/postgres.py"]
    pg["env"] = [
        {"name": "READER_PASSWORD", "value": READER_PASSWORD},
        {"name": "PGDATA", "value": "/var/lib/postgresql/data"},
    ]
    pg["volumeMounts"] += [
        {"name": "scripts", "mountPath": "/scripts"},
        {"name": "scripts", "mountPath": "/sql/readonly-role.sql", "subPath": "readonly-role.sql"},
        {"name": "data", "mountPath": "/var/lib/postgresql"},
    ]
    pg["readinessProbe"] = {"exec": {"command": ["test", "-f", "/tmp/loaded"]}, "periodSeconds": 2}
    docs += _workload(
        "postgres",
        "data",
        pg,
        [
            {"name": "scripts", "configMap": {"name": "postgres-scripts"}},
            {"name": "data", "emptyDir": {}},
        ],
    )

    docs.append(
        _configmap("searxng-script", "search", {"searxng.py": (PODS / "searxng.py").read_text()})
    )
    web = _container("searxng", testkit, [], 8080)
    web["command"] = ["python", "/scripts/searxng.py"]
    web["volumeMounts"].append({"name": "scripts", "mountPath": "/scripts"})
    web["readinessProbe"] = {"tcpSocket": {"port": 8080}, "periodSeconds": 2}
    docs += _workload(
        "searxng", "search", web, [{"name": "scripts", "configMap": {"name": "searxng-script"}}]
    )

    docs.append(
        _configmap(
            "model-scenario",
            "models",
            {"seed.json": json.dumps(seed_scenario()), "judge.py": (PODS / "judge.py").read_text()},
        )
    )
    model = _container(
        "model",
        testkit,
        [
            "scripted-model",
            "--scenario",
            "/scenario/seed.json",
            "--responder",
            "/scenario/judge.py:respond",
            "--host",
            "0.0.0.0",
            "--port",
            "8000",
        ],
        8000,
    )
    model["volumeMounts"].append({"name": "scenario", "mountPath": "/scenario"})
    model["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 2}
    docs += _workload(
        "model", "models", model, [{"name": "scenario", "configMap": {"name": "model-scenario"}}]
    )
    return docs


def vector_store(namespace: str, image: str, host_dir: Path, node: str) -> list[dict[str, Any]]:
    """A hostPath PersistentVolume on the real node, its claim, and the ingest Job filling it
    with the sample contracts (the same chunks and MiniLM embeddings the demo uses)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{namespace}-contract-clauses"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": namespace, "name": "contract-clauses"},
                "hostPath": {"path": str(host_dir), "type": "Directory"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "contract-clauses", "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": f"{namespace}-contract-clauses",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "ingest-contract-clauses", "namespace": namespace},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "securityContext": _pod_security(),
                        "automountServiceAccountToken": False,
                        "containers": [
                            {
                                **_container(
                                    "ingest",
                                    image,
                                    [
                                        "ingest",
                                        "--sample",
                                        "--collection",
                                        "contract-clauses",
                                        "--qdrant-path",
                                        "/var/lib/sleuth/qdrant/qdrant",
                                        "--quiet",
                                    ],
                                    8080,
                                ),
                                "volumeMounts": [
                                    {"name": "tmp", "mountPath": "/tmp"},
                                    {"name": "store", "mountPath": "/var/lib/sleuth/qdrant"},
                                ],
                            }
                        ],
                        "volumes": [
                            {"name": "tmp", "emptyDir": {}},
                            {
                                "name": "store",
                                "persistentVolumeClaim": {"claimName": "contract-clauses"},
                            },
                        ],
                    }
                },
            },
        },
    ]


TRACE_NAMESPACE = "observability"
JAEGER_PORTS = {"otlp-http": 4318, "query": 16686, "query-grpc": 16685, "health": 13133}


def trace_backend(image: str, binary: Path, config: Path) -> list[dict[str, Any]]:
    """Jaeger (the tests' trace backend, tests/support/jaeger.yaml) in a pod on the real node:
    the binary built on this machine mounted from the host, every listener on the pod's address,
    an OTLP/HTTP port the sleuth pods export to and the query API the test reads back."""
    env = {
        "JAEGER_HOST": "0.0.0.0",
        "JAEGER_OTLP_HTTP_PORT": JAEGER_PORTS["otlp-http"],
        "JAEGER_QUERY_HTTP_PORT": JAEGER_PORTS["query"],
        "JAEGER_QUERY_GRPC_PORT": JAEGER_PORTS["query-grpc"],
        "JAEGER_HEALTH_PORT": JAEGER_PORTS["health"],
    }
    container = _container("jaeger", image, ["--config", "/config/jaeger.yaml"], 4318)
    container |= {
        "command": ["/opt/jaeger/jaeger"],
        "env": [{"name": k, "value": str(v)} for k, v in env.items()],
        "ports": [{"name": n, "containerPort": p} for n, p in JAEGER_PORTS.items()],
        "readinessProbe": {"httpGet": {"path": "/status", "port": "health"}, "periodSeconds": 2},
    }
    container["volumeMounts"] += [
        {"name": "binary", "mountPath": "/opt/jaeger", "readOnly": True},
        {"name": "config", "mountPath": "/config", "readOnly": True},
    ]
    volumes = [
        {"name": "binary", "hostPath": {"path": str(binary.parent), "type": "Directory"}},
        {"name": "config", "configMap": {"name": "jaeger-config"}},
    ]
    deployment, service = _workload("jaeger", TRACE_NAMESPACE, container, volumes)
    deployment["spec"]["template"]["spec"]["nodeSelector"] = {"sleuth.dev/real-node": "true"}
    service["spec"]["ports"] = [
        {"name": n, "port": p} for n, p in JAEGER_PORTS.items() if n != "query-grpc"
    ]
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": TRACE_NAMESPACE}},
        _configmap("jaeger-config", TRACE_NAMESPACE, {"jaeger.yaml": config.read_text()}),
        deployment,
        service,
    ]


# A caller's pod: POSTs the seed's question to the agent with the token its kubelet mounted (a
# TokenRequest of the pod's ServiceAccount, audience the agent's) and prints the status it got.
ASK_WITH_MOUNTED_TOKEN = """
import json, sys, urllib.error, urllib.request
token = open("/var/run/secrets/caller/token").read().strip()
request = urllib.request.Request(sys.argv[1], data=json.dumps({"question": sys.argv[2]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + token})
try:
    status = urllib.request.urlopen(request, timeout=120).status
except urllib.error.HTTPError as err:
    status = err.code
print("status", status)
"""


def caller_job(
    name: str, account: str, audience: str, image: str, url: str, namespace: str
) -> dict[str, Any]:
    """A Job whose pod runs as ServiceAccount ``account`` with a projected token for
    ``audience`` and asks the agent at ``url`` once (restricted Pod Security, no other token)."""
    pod = {
        "serviceAccountName": account,
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65532,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": "ask",
                "image": image,
                "imagePullPolicy": "Never",
                "command": ["python", "-c", ASK_WITH_MOUNTED_TOKEN, url, SEED_QUESTION],
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "capabilities": {"drop": ["ALL"]},
                },
                "volumeMounts": [{"name": "caller", "mountPath": "/var/run/secrets/caller"}],
            }
        ],
        "volumes": [
            {
                "name": "caller",
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "path": "token",
                                "audience": audience,
                                "expirationSeconds": 3600,
                            }
                        }
                    ]
                },
            }
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"backoffLimit": 0, "template": {"spec": pod}},
    }
