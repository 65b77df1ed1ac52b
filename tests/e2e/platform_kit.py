"""The pieces of the end-to-end run on the real node: images, the example as a user edits it,
the stand-ins for what a platform team already has (PostgreSQL, the Qdrant store, SearxNG, the
model server), and polling.

Only the GPU model server is a stand-in that is not the real thing: the scripted OpenAI-compatible
server (real HTTP, the real wire format) with the seed article's latency, in a pod. PostgreSQL
is a real server (the ``pgserver`` wheel's binaries) in a pod; the vector store is Qdrant's
embedded mode on a PersistentVolumeClaim filled by a ``sleuth ingest`` Job (no Qdrant server can
be had from a package registry here); SearxNG is the demo's canned JSON endpoint in a pod.
"""

from __future__ import annotations

import copy
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from sleuth.agent.sample.contracts import SEED_PARAMS, SEED_SQL
from sleuth.scripted import Match, Rule, Scenario, ScriptedResponse, seed_latency_profile
from sleuth.scripted import ScriptedToolCall as Call

ROOT = Path(__file__).resolve().parents[2]
PODS = Path(__file__).resolve().parent / "pods"
EXAMPLES = ROOT / "examples" / "contracts"
T = TypeVar("T")

READER_PASSWORD = "e2e-reader-password"
# The real node has 2 cores: the agents request a tenth of the default CPU (a team sizes them).
SMALL_NODE = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1536Mi"}}
MODEL_URL = "http://model.models.svc:8000/v1"
SEED_SEARCH = "EU provider contracts 2025 amount above 100k special conditions recurring clauses"
ANSWER = (
    "In 2025 you signed 47 contracts with EU providers above 100,000 €, 8.3 M€ in total "
    "[sql:contracts]. The recurring special condition is the late-delivery penalty of clause "
    "8.3, 2% per month on the invoiced amount (Provider A and Provider B) "
    "[contract-provider-a-2025#0][contract-provider-b-2025#0]; the CPI price revision capped "
    "at 4% per year (clause 7.1) applies to Provider C [contract-provider-c-2025#0]."
)


def eventually(what: str, probe: Callable[[], T | None], timeout: float = 180) -> T:
    """Poll ``probe`` until it returns something truthy; AssertionError/OSError mean not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except (AssertionError, OSError, subprocess.SubprocessError) as err:
            last = err
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")
        time.sleep(1)


def build_image(name: str) -> tuple[Path, str]:
    """``tests/cluster/image.sh --image NAME`` (cached by the key): archive path and ref."""
    proc = subprocess.run(
        [str(ROOT / "tests" / "cluster" / "image.sh"), "--image", name],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    archive, ref = proc.stdout.split()
    return Path(archive), ref


def seed_scenario() -> dict[str, Any]:
    """The model's script: the seed's two tool rounds, then the answer once both results are in
    its context (rules match on the observations, so a broken tool path cannot answer)."""
    scenario = Scenario(
        latency=seed_latency_profile(),
        rules=[
            Rule(
                match=Match(position=0, last_message_contains="100k€"),
                response=ScriptedResponse(
                    tool_calls=[
                        Call(
                            name="sql_query",
                            arguments={"query": SEED_SQL, "params": list(SEED_PARAMS)},
                        )
                    ]
                ),
            ),
            Rule(
                match=Match(position=1, last_message_contains='"num_contracts": 47'),
                response=ScriptedResponse(
                    tool_calls=[
                        Call(name="vector_search", arguments={"query": SEED_SEARCH, "top_k": 5})
                    ]
                ),
            ),
            Rule(
                match=Match(position=2, last_message_contains="Clause 8.3"),
                response=ScriptedResponse(content=ANSWER),
            ),
        ],
    )
    return scenario.model_dump(mode="json", exclude_none=True)


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def example_as_a_user_edits_it(namespace: str) -> list[dict[str, Any]]:
    """examples/contracts with only the values a platform team changes for its own cluster:
    the model (an existing OpenAI-compatible endpoint), the Qdrant store (the embedded one on a
    claim), the database password, and the namespace."""
    docs: list[dict[str, Any]] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        docs += _docs(path)
    out = []
    for doc in copy.deepcopy(docs):
        doc.setdefault("metadata", {})["namespace"] = namespace
        kind, name = doc["kind"], doc["metadata"]["name"]
        if kind == "Secret" and name == "contracts-postgres":
            doc["stringData"]["uri"] = (
                f"postgresql://sleuth_reader:{READER_PASSWORD}@postgres.data.svc:5432/contracts"
            )
        if kind == "AgentDeployment":
            doc["spec"]["model"] = {"endpoint": MODEL_URL, "servedModelName": "scripted"}
            doc["spec"]["agent"]["resources"] = SMALL_NODE
        if kind == "ToolBinding" and doc["spec"]["type"] == "vector_search":
            settings = doc["spec"]["vectorSearch"]
            settings.pop("url")
            settings["embedded"] = {"claimName": "contract-clauses"}
        out.append(doc)
    return out


def self_hosted_agent(namespace: str) -> dict[str, Any]:
    """The example's AgentDeployment as written (vLLM on 4 H100s), under another name: its model
    pod lands on the simulated H100 nodes, its agent pods run for real."""
    (doc,) = [
        d for d in _docs(EXAMPLES / "10-agentdeployment.yaml") if d["kind"] == "AgentDeployment"
    ]
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": "contracts-vllm", "namespace": namespace}
    doc["spec"]["agent"]["replicas"] = 1
    doc["spec"]["agent"]["resources"] = SMALL_NODE
    return doc


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


def yaml_docs(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)
