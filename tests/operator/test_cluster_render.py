"""``sleuth render`` against the real control plane: it prints what the operator applies, and
every pod it renders is admitted under the ``restricted`` Pod Security Standard.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.operator.apiserver import slice_api_server
from sleuth.operator.render.meta import RenderSettings
from sleuth.operator.rendercli import render_objects
from tests.operator.operator_testkit import OperatorProcess, example_docs
from tests.support.paths import EXAMPLES, SLEUTH
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KINDS = "agentdeployments,toolbindings,evalschedules"
CHILD_KINDS = (
    "deployments,services,configmaps,networkpolicies,poddisruptionbudgets,cronjobs,"
    "serviceaccounts,roles,rolebindings,prometheusrules"
)


def _json(kube: Any, *args: str) -> Any:
    return json.loads(kube.kubectl(*args, "-o", "json").stdout)


def _subset(want: Any, got: Any, path: str = "") -> list[str]:
    """Where ``want`` is not contained in ``got`` (the apiserver adds defaults, never removes)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path}: {got!r} is not a mapping"]
        out = []
        for key, value in want.items():
            if key not in got:
                if value not in ([], {}, None):  # the apiserver omits empty lists and maps
                    out.append(f"{path}.{key}: missing")
            else:
                out += _subset(value, got[key], f"{path}.{key}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: {got!r} != {want!r}"]
        return [
            d
            for i, (w, g) in enumerate(zip(want, got, strict=True))
            for d in _subset(w, g, f"{path}[{i}]")
        ]
    return [] if want == got or str(want) == str(got) else [f"{path}: {got!r} != {want!r}"]


def test_render_prints_what_the_operator_applies(
    kube: Any, namespace: str, operator: OperatorProcess, tmp_path: Path
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "agentdeployment/contracts",
        "--timeout=120s",
    )
    resources = _json(kube, "get", KINDS, "-n", namespace)["items"]
    uids = {r["metadata"]["uid"] for r in resources}

    def owned() -> dict[tuple[str, str], dict[str, Any]]:
        items = _json(kube, "get", CHILD_KINDS, "-n", namespace)["items"]
        return {
            (o["kind"], o["metadata"]["name"]): o
            for o in items
            if any(r["uid"] in uids for r in o["metadata"].get("ownerReferences") or [])
        }

    # The resources as the operator reads them (uids included), through the command itself,
    # with what the operator reads from the cluster at start as flags: the API server's
    # endpoints (EndpointSlice default/kubernetes), which the agent's policy admits.
    inputs = tmp_path / "resources.yaml"
    inputs.write_text(yaml.safe_dump_all(resources))
    endpoints = slice_api_server(_json(kube, "get", "endpointslice", "kubernetes", "-n", "default"))
    assert endpoints is not None
    flags = [f"--api-server-cidr={c}" for c in endpoints.cidrs]
    flags.append(f"--api-server-port={endpoints.port}")
    proc = subprocess.run(
        [str(SLEUTH), "render", "-f", str(inputs), *flags],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    printed = [d for d in yaml.safe_load_all(proc.stdout) if d]
    keys = [(d["kind"], d["metadata"]["name"]) for d in printed]
    assert len(keys) == len(set(keys))

    def same_set() -> bool:
        live = owned()
        assert set(live) == set(keys), set(live) ^ set(keys)
        return True

    eventually(same_set, what="the operator's children are exactly what sleuth render printed")
    live = owned()
    for doc in printed:
        key = (doc["kind"], doc["metadata"]["name"])
        assert _subset(doc, live[key]) == [], key
    # Every pod the operator makes has its NetworkPolicy.
    assert {k[1] for k in keys if k[0] == "NetworkPolicy"} == {
        "contracts-model",
        "contracts-agent",
        "contracts-clauses-tool",
        "contracts-sql-tool",
        "contracts-web-tool",
        "contracts-weekly-eval",
    }


def _pods_of(children: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A Pod built from every pod template in ``children`` (what their controllers create)."""
    pods = []
    for child in children:
        spec = child.get("spec") or {}
        if child["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if "template" not in spec:
            continue
        template = spec["template"]
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{child['metadata']['name']}-pss",
                    "labels": template["metadata"].get("labels", {}),
                },
                "spec": copy.deepcopy(template["spec"]),
            }
        )
    return pods


def _dry_run(kube: Any, ns: str, pod: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return kube.kubectl(
        "create", "--dry-run=server", "-n", ns, "-f", "-", input=json.dumps(pod), check=False
    )


def test_every_rendered_pod_passes_the_restricted_standard(
    kube: Any, namespace: str, crds: None
) -> None:
    kube.kubectl(
        "label",
        "namespace",
        namespace,
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/enforce-version=latest",
    )
    docs = [
        d for d in example_docs() if d["kind"] in ("AgentDeployment", "ToolBinding", "EvalSchedule")
    ]
    for doc in docs:
        doc["metadata"]["namespace"] = namespace
        doc["metadata"]["uid"] = ""
    agent = next(d for d in docs if d["kind"] == "AgentDeployment")
    agent["spec"]["model"]["apiKeySecretRef"] = {"name": "contracts-vllm", "key": "api-key"}
    # An embedded Qdrant (a claim mounted in the tool pod) and a sharded eval, too.
    docs.append(
        {
            "apiVersion": "sleuth.dev/v1alpha1",
            "kind": "ToolBinding",
            "metadata": {"name": "contracts-local", "namespace": namespace, "uid": ""},
            "spec": {
                "agentRef": {"name": "contracts"},
                "type": "vector_search",
                "vectorSearch": {
                    "embedded": {"claimName": "clauses-store"},
                    "collection": "clauses",
                },
                "name": "local_search",
            },
        }
    )
    rendered = render_objects(docs, RenderSettings())
    assert rendered.refused == []
    # The eval pods run as their ServiceAccount: it must exist for the pod to be admitted.
    for child in rendered.children:
        if child["kind"] == "ServiceAccount":
            account = {**child, "metadata": {**child["metadata"], "ownerReferences": []}}
            kube.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(account))
    pods = _pods_of(rendered.children)
    kinds = {p["metadata"]["name"] for p in pods}
    assert {"contracts-model-pss", "contracts-agent-pss", "contracts-weekly-eval-pss"} <= kinds
    for pod in pods:
        proc = _dry_run(kube, namespace, pod)
        assert proc.returncode == 0, f"{pod['metadata']['name']}: {proc.stderr}"
        assert "violate" not in proc.stderr, proc.stderr

    # The check can fail: the model server as it was rendered before (root, writable root
    # filesystem) is refused, naming what it violates.
    model = next(p for p in pods if p["metadata"]["name"] == "contracts-model-pss")
    before = copy.deepcopy(model)
    before["spec"]["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    before["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": False,
    }
    proc = _dry_run(kube, namespace, before)
    assert proc.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in proc.stderr
    assert "runAsNonRoot" in proc.stderr
