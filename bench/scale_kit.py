"""The parts of bench/operator_scale.py that are not the measurement itself.

- :class:`Cluster`: the test control plane (tests/cluster/up.sh with a wide Service range and an
  audit policy), or one given by kubeconfig; kubectl; the benchmark's two identities.
- :class:`AuditLog`: the apiserver's audit log, which logs only the write requests (create,
  update, patch, delete) of the benchmark's ServiceAccounts, read incrementally.
- :func:`cpu_seconds`, :func:`peak_rss_mib`: a process's CPU time and peak RSS from /proc.
- :func:`agent_objects`, :func:`rendered_children`: the workload (N AgentDeployments with three
  ToolBindings each) and the children the operator's own renderers make of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.common import API_VERSION
from sleuth.core.kube import new_api_client
from sleuth.operator.bindings import bindings_for, parse_binding
from sleuth.operator.reconcile_common import owner_of
from sleuth.operator.render.agent import render_agent
from sleuth.operator.render.meta import RenderSettings
from sleuth.operator.render.model import render_model
from sleuth.operator.render.tool import render_tool

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_DIR = ROOT / "tests" / "cluster"
BENCH_NAMESPACE = "sleuth-bench"  # the identities live here; the audit policy names its group
IDENTITIES = ("operator", "bare")
WRITE_VERBS = ["create", "update", "patch", "delete", "deletecollection"]
SERVICE_CIDR = "10.0.0.0/16"  # up.sh's default /24 holds about 250 Services (~50 agents)
H100 = "NVIDIA-H100-80GB-HBM3"
SECRET_NAME = "bench-tools"

AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],  # one event per request, when its response is sent
    "rules": [
        {
            "level": "Metadata",
            "userGroups": [f"system:serviceaccounts:{BENCH_NAMESPACE}"],
            "verbs": WRITE_VERBS,
        },
        {"level": "None"},
    ],
}


def user_of(identity: str) -> str:
    return f"system:serviceaccount:{BENCH_NAMESPACE}:{identity}"


# --- the control plane ------------------------------------------------------------------------


@dataclass
class Cluster:
    """A control plane to benchmark on, with kubectl and an audit log (None: writes uncounted)."""

    kubeconfig: Path
    bin_dir: Path
    audit_log: Path | None
    name: str = ""  # set when this run started it (and stops it)
    workdir: Path = field(default_factory=Path)

    @classmethod
    def start(cls, name: str, h100: int, cpu: int, workdir: Path, timeout: float) -> Cluster:
        policy = workdir / "audit-policy.yaml"
        policy.write_text(yaml.safe_dump(AUDIT_POLICY), encoding="utf-8")
        env = {**os.environ, "SLEUTH_CLUSTER": name}
        args = ["--h100", str(h100), "--cpu", str(cpu), "--service-cidr", SERVICE_CIDR]
        up = subprocess.run(
            [str(CLUSTER_DIR / "up.sh"), *args, "--audit-policy", str(policy)],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if up.returncode != 0:
            subprocess.run([str(CLUSTER_DIR / "down.sh")], env=env, capture_output=True)
            raise SystemExit(f"tests/cluster/up.sh failed:\n{up.stderr[-3000:]}")
        cache = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
        return cls(
            kubeconfig=Path(up.stdout.strip().splitlines()[-1]),
            bin_dir=cache / "bin" / "current",
            audit_log=cache / "kwok" / f"{name}.audit.log",
            name=name,
            workdir=workdir,
        )

    def stop(self) -> None:
        if self.name:
            env = {**os.environ, "SLEUTH_CLUSTER": self.name}
            subprocess.run([str(CLUSTER_DIR / "down.sh")], env=env, capture_output=True)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 300
    ) -> str:
        proc = subprocess.run(
            [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()[-2000:]}")
        return proc.stdout

    def apply(self, objects: list[dict[str, Any]]) -> None:
        body = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects})
        self.kubectl(
            "apply", "--server-side", "--field-manager", "sleuth-bench", "-f", "-", input=body
        )

    def install_crds(self) -> None:
        self.kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
        self.kubectl(
            "wait",
            "--for=condition=Established",
            "--timeout=120s",
            "crd/agentdeployments.sleuth.dev",
            "crd/toolbindings.sleuth.dev",
        )

    def identities(self) -> dict[str, Path]:
        """A cluster-admin ServiceAccount per identity, and a kubeconfig with its token: the
        audit log tells the operator's writes from the bare client's by user."""
        objects: list[dict[str, Any]] = [_namespace(BENCH_NAMESPACE)]
        for who in IDENTITIES:
            meta = {"name": who, "namespace": BENCH_NAMESPACE}
            objects.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
            objects.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": f"sleuth-bench-{who}"},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "ClusterRole",
                        "name": "cluster-admin",
                    },
                    "subjects": [meta | {"kind": "ServiceAccount"}],
                }
            )
        self.apply(objects)
        admin = yaml.safe_load(self.kubeconfig.read_text(encoding="utf-8"))
        context = next(
            c["context"] for c in admin["contexts"] if c["name"] == admin["current-context"]
        )
        cluster = next(c for c in admin["clusters"] if c["name"] == context["cluster"])
        core = client.CoreV1Api(new_api_client(str(self.kubeconfig)))
        configs = {}
        for who in IDENTITIES:
            request = {"spec": {"expirationSeconds": 86400}}
            token = core.create_namespaced_service_account_token(who, BENCH_NAMESPACE, request)
            config = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [cluster],
                "users": [{"name": who, "user": {"token": token.status.token}}],
                "contexts": [{"name": who, "context": {"cluster": cluster["name"], "user": who}}],
                "current-context": who,
            }
            path = self.workdir / f"{who}.kubeconfig"
            path.write_text(yaml.safe_dump(config), encoding="utf-8")
            path.chmod(0o600)
            configs[who] = path
        return configs

    def fresh_namespace(self, name: str, secret: bool = True) -> None:
        objects = [_namespace(name)]
        if secret:
            objects.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": SECRET_NAME,
                        "namespace": name,
                        "annotations": {"sleuth.dev/allowed-uses": "ToolBinding/sql_query"},
                    },
                    "stringData": {"uri": "postgresql://reader@postgres.data.svc/contracts"},
                }
            )
        self.apply(objects)

    def delete_namespace(self, name: str, timeout: float) -> float | None:
        """Delete and wait until it is gone; seconds taken, None when still there at timeout."""
        started = time.monotonic()
        self.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found")
        deadline = started + timeout
        while time.monotonic() < deadline:
            out = self.kubectl("get", "namespace", name, "--ignore-not-found", "-o", "name")
            if not out.strip():
                return time.monotonic() - started
            time.sleep(1)
        return None


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


# --- the audit log ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Write:
    at: float  # epoch seconds the apiserver received it
    user: str
    verb: str
    resource: str  # plural[/subresource]
    code: int


class AuditLog:
    """Write requests the apiserver logged, read from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.writes: list[Write] = []

    def read(self) -> None:
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self.offset += end
        for line in data[:end].splitlines():
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", "?")
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            at = datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
            code = int((event.get("responseStatus") or {}).get("code", 0))
            self.writes.append(Write(at, event["user"]["username"], event["verb"], resource, code))

    def between(self, identity: str, start: float, end: float) -> list[Write]:
        self.read()
        user = user_of(identity)
        return [w for w in self.writes if w.user == user and start <= w.at < end]


def breakdown(writes: list[Write], top: int = 4) -> str:
    """The most frequent (verb, resource) pairs, e.g. ``patch deployments 120, create events 8``."""
    counts = Counter(f"{w.verb} {w.resource}" for w in writes)
    return ", ".join(f"{k} {v}" for k, v in counts.most_common(top)) or "none"


# --- a process, from /proc --------------------------------------------------------------------

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident set size (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def resync_pass(log: Path, pid: int, timeout: float, quiet_cpu: float = 0.05) -> dict[str, Any]:
    """Wait (at most ``timeout`` s) for the operator's next resync (its ``resync: relisting``
    log line), then for the pass — its lists, then a reconcile of every object — to end (CPU
    below ``quiet_cpu`` s per s over 3 s); its CPU seconds (from the last sample before the
    line), wall seconds and object count (its ``resync: N objects`` line). ``{}`` when no pass
    started in time."""

    def lines() -> list[str]:
        return [ln for ln in log.read_text(errors="replace").splitlines() if "resync: " in ln]

    def starts() -> int:
        return sum("resync: relisting" in ln for ln in lines())

    before, deadline = starts(), time.monotonic() + timeout
    cpu0 = cpu_seconds(pid)
    while starts() == before:
        if time.monotonic() > deadline:
            return {}
        cpu0 = cpu_seconds(pid)
        time.sleep(0.5)
    started = time.monotonic()
    samples = [(started, cpu0)]
    while time.monotonic() < deadline:
        time.sleep(1.0)
        samples.append((time.monotonic(), cpu_seconds(pid)))
        old = [s for s in samples if s[0] <= samples[-1][0] - 3.0]
        if old and (samples[-1][1] - old[-1][1]) / (samples[-1][0] - old[-1][0]) < quiet_cpu:
            end = old[-1]  # the pass ended before the quiet seconds
            counts = [ln for ln in lines() if "objects enqueued" in ln]
            words = counts[-1].split("resync: ", 1)[1].split() if counts else []
            return {
                "cpu_s": end[1] - cpu0,
                "wall_s": end[0] - started,
                "objects": int(words[0]) if words and words[0].isdigit() else None,
                "started_at": time.time() - (time.monotonic() - started),
            }
    return {"cpu_s": cpu_seconds(pid) - cpu0, "wall_s": None, "objects": None}


# --- the workload -----------------------------------------------------------------------------

TOOLS: dict[str, dict[str, Any]] = {
    "docs": {
        "type": "vector_search",
        "vectorSearch": {"url": "http://qdrant.data.svc:6333", "collection": "docs"},
    },
    "sql": {
        "type": "sql_query",
        "sqlQuery": {
            "connectionSecretRef": {"name": SECRET_NAME, "key": "uri"},
            "allowedTables": ["contracts"],
        },
    },
    "web": {
        "type": "web_search",
        "webSearch": {
            "provider": "searxng",
            "url": "http://searxng.search.svc:8080",
            "allowExternal": True,
        },
    },
}


def agent_objects(namespace: str, count: int) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """``count`` AgentDeployments (an 8B model on one H100, one agent replica), each with three
    ToolBindings (vector_search, sql_query, web_search)."""
    out = []
    for i in range(count):
        name = f"a{i:04d}"
        agent = {
            "apiVersion": API_VERSION,
            "kind": "AgentDeployment",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "model": {
                    "name": "meta-llama/Llama-3.1-8B-Instruct",
                    "gpu": {"count": 1, "product": H100},
                    "maxModelLen": 8192,
                },
                "agent": {"replicas": 1},
            },
        }
        tools = [
            {
                "apiVersion": API_VERSION,
                "kind": "ToolBinding",
                "metadata": {"name": f"{name}-{suffix}", "namespace": namespace},
                "spec": {"agentRef": {"name": name}, **spec},
            }
            for suffix, spec in TOOLS.items()
        ]
        out.append((agent, tools))
    return out


def rendered_children(
    workload: list[tuple[dict[str, Any], list[dict[str, Any]]]], settings: RenderSettings
) -> list[dict[str, Any]]:
    """Every child the operator renders for the workload, in its order (model, agent, then each
    tool), without ownerReferences: the owners do not exist where the bare client applies."""
    children: list[dict[str, Any]] = []
    stamp = "2026-01-01T00:00:00Z"
    for agent, tools in workload:
        live = [_as_live(obj, stamp) for obj in [agent, *tools]]
        owner = owner_of(live[0])
        spec = AgentDeploymentSpec.model_validate(agent["spec"])
        bound = bindings_for(live[1:], agent["metadata"]["name"])
        children += render_model(owner, spec.model, settings)
        children += render_agent(owner, spec, bound.accepted, settings)
        for tool in live[1:]:
            children += render_tool(owner_of(tool), parse_binding(tool), settings)
    for child in children:
        child["metadata"].pop("ownerReferences", None)
    return children


def _as_live(obj: dict[str, Any], stamp: str) -> dict[str, Any]:
    meta = {**obj["metadata"], "uid": str(uuid.uuid4()), "creationTimestamp": stamp}
    return {**obj, "metadata": meta}
