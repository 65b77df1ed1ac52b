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
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import yaml

from sleuth.scripted import Scenario, seed_latency_profile
from tests.support import polling
from tests.support.seed import seed_rules

ROOT = Path(__file__).resolve().parents[2]
PODS = Path(__file__).resolve().parent / "pods"
EXAMPLES = ROOT / "examples" / "contracts"
T = TypeVar("T")

READER_PASSWORD = "e2e-reader-password"
# The real node has 2 cores: the agents request a tenth of the default CPU (a team sizes them).
SMALL_NODE = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1536Mi"}}
MODEL_URL = "http://model.models.svc:8000/v1"


def eventually(what: str, probe: Callable[[], T | None], timeout: float = 180) -> T:
    """tests.support.polling.eventually, where a refused connection or a failed kubectl (e.g.
    before kube-proxy has programmed a new Service) also means "not yet"."""
    found: T = polling.eventually(
        probe, timeout, what, interval=1.0,
        not_yet=(AssertionError, OSError, subprocess.SubprocessError),
    )  # fmt: skip
    return found


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
    """The model pod's script: the seed's rules, with the seed article's latency."""
    scenario = Scenario(latency=seed_latency_profile(), rules=seed_rules())
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


def yaml_docs(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, allow_unicode=True)


@contextmanager
def prometheus(tmp_path: Path, targets: list[str], path: str) -> Iterator[Any]:
    """Debian's Prometheus on loopback scraping ``targets`` every second; yields a query
    function returning the first sample's value (None when there is none)."""
    config = tmp_path / "prometheus.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "sleuth-operator",
                        "honor_labels": True,
                        "scrape_timeout": "1s",
                        "metrics_path": path,
                        "static_configs": [{"targets": targets}],
                    }
                ],
            }
        )
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [shutil.which("prometheus") or "/usr/bin/prometheus", f"--config.file={config}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
         "--log.level=warn"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def query(expr: str) -> float | None:
        url = f"http://127.0.0.1:{port}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=5) as response:
            result = json.loads(response.read())["data"]["result"]
        return float(result[0]["value"][1]) if result else None

    try:
        yield query
    finally:
        proc.terminate()
        proc.wait(timeout=30)
