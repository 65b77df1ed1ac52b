"""The chart's ValidatingAdmissionPolicies, evaluated by the real kube-apiserver: every endpoint and
image of the shared case table (tests/support/guardrail_cases.py) gets the verdict the operator's
Python rules give it (tests/core/test_guardrail_rules.py), refusals name the field, and each kind's
endpoint and image fields are covered. The policies and their bindings come from `helm template`
with the allowlists of the case table, bound to the test's namespace only."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.charts.chart_testkit import CHART, documents, find, run_helm
from tests.support.guardrail_cases import ALLOWED_HOSTS, ENDPOINTS, IMAGE_REPOSITORIES, IMAGES
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster


@pytest.fixture
def policies(kube: Any, namespace: str, helm: Path, crds: None) -> Iterator[list[str]]:
    """The chart's policies and bindings (a release of its own), bound to ``namespace``."""
    release = f"adm-{uuid.uuid4().hex[:6]}"
    rendered = run_helm(
        helm,
        "template",
        release,
        str(CHART),
        "--namespace",
        "sleuth-system",
        "--set",
        f"watchNamespaces={{{namespace}}}",
        "--set",
        f"admission.allowedHosts={{{','.join(ALLOWED_HOSTS)}}}",
        "--set",
        f"admission.imageRepositories={{{','.join(IMAGE_REPOSITORIES)}}}",
    ).stdout
    docs = documents(rendered)
    chosen = find(docs, "ValidatingAdmissionPolicy") + find(
        docs, "ValidatingAdmissionPolicyBinding"
    )
    assert len(chosen) == 6, "one policy and one binding per kind"
    kube.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(chosen))
    names = [f"{d['kind'].lower()}/{d['metadata']['name']}" for d in chosen]
    try:
        yield names
    finally:
        kube.kubectl("delete", *names, "--wait=false", check=False)


@pytest.fixture(scope="session")
def crds(kube: Any) -> None:
    from tests.support.paths import ROOT

    kube.kubectl("apply", "--server-side", "-f", str(ROOT / "crds"))
    kube.kubectl(
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/agentdeployments.sleuth.dev",
        "crd/toolbindings.sleuth.dev",
        "crd/evalschedules.sleuth.dev",
    )


def _web_search(url: str, image: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "agentRef": {"name": "contracts"},
        "type": "web_search",
        "webSearch": {"url": url, "allowExternal": True},
    }
    if image is not None:
        spec["image"] = image
    return {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "ToolBinding",
        "metadata": {"name": "search"},
        "spec": spec,
    }


def _try(kube: Any, namespace: str, doc: dict[str, Any]) -> str:
    """ "" when the apiserver admits ``doc`` (server-side dry run: nothing is stored), else its
    error message."""
    out = kube.kubectl(
        "create",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump(doc),
        check=False,
    )
    return "" if out.returncode == 0 else out.stderr


def _wait_for_policies(kube: Any, namespace: str) -> None:
    """The apiserver loads new policies asynchronously: wait until one refuses."""
    eventually(
        lambda: "denied request" in _try(kube, namespace, _web_search("http://qdrant:6333")),
        timeout=60,
        what="the admission policies in force",
    )


def test_the_policies_refuse_what_the_operator_refuses(
    kube: Any, namespace: str, policies: list[str]
) -> None:
    _wait_for_policies(kube, namespace)
    wrong = []
    for url, allowed in ENDPOINTS:
        error = _try(kube, namespace, _web_search(url))
        if (error == "") != allowed or (
            error and "spec.webSearch.url: not an allowed" not in error
        ):
            wrong.append((url, allowed, error))
    for image, allowed in IMAGES:
        error = _try(kube, namespace, _web_search("https://search.example.com", image))
        if (error == "") != allowed or (error and "spec.image: not an allowed image" not in error):
            wrong.append((image, allowed, error))
    assert not wrong, json.dumps(wrong, indent=1)


def test_every_kind_is_covered(kube: Any, namespace: str, policies: list[str]) -> None:
    _wait_for_policies(kube, namespace)
    attacker = "http://collector.attacker.example/v1"
    agent = {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": "contracts"},
        "spec": {"model": {"endpoint": attacker, "servedModelName": "llama"}},
    }
    assert "spec.model.endpoint: not an allowed endpoint" in _try(kube, namespace, agent)
    agent["spec"] = {
        "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"},
        "agent": {"image": "docker.io/attacker/agent:1"},
    }
    assert "spec.agent.image: not an allowed image" in _try(kube, namespace, agent)
    agent["spec"] = {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct", "image": "evil/vllm:1"}}
    assert "spec.model.image: not an allowed image" in _try(kube, namespace, agent)
    agent["spec"] = {
        "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"},
        "agent": {"tracing": {"endpoint": attacker}},
    }
    assert "spec.agent.tracing.endpoint: not an allowed endpoint" in _try(kube, namespace, agent)
    agent["spec"]["agent"] = {}
    assert _try(kube, namespace, agent) == ""
    # A token issuer's JWKS is read by the agent's pods: checked in every item of the list.
    issuers = [
        {"issuer": "https://idp.example", "jwksUrl": "https://api.trusted.example/jwks"},
        {"issuer": "https://evil.example", "jwksUrl": "https://keys.attacker.example/jwks"},
    ]
    agent["spec"]["agent"] = {"access": {"issuers": issuers}}
    error = _try(kube, namespace, agent)
    assert "spec.agent.access.issuers[].jwksUrl: not an allowed endpoint" in error
    agent["spec"]["agent"]["access"]["issuers"] = issuers[:1]
    assert _try(kube, namespace, agent) == ""
    agent["spec"]["agent"] = {}
    agent["spec"] = {
        "model": {
            "name": "meta-llama/Llama-3.1-8B-Instruct",
            "extraArgs": ["--gpu-memory-utilization=0.9", "--trust_remote"],
        }
    }
    error = _try(kube, namespace, agent)
    assert "spec.model.extraArgs must not widen what the model server may do" in error
    agent["spec"]["model"]["extraArgs"] = ["--gpu-memory-utilization=0.9"]
    assert _try(kube, namespace, agent) == ""
    schedule = {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "EvalSchedule",
        "metadata": {"name": "weekly"},
        "spec": {
            "agentRef": {"name": "contracts"},
            "schedule": "0 3 * * 1",
            "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            "judge": {"endpoint": attacker, "model": "judge"},
        },
    }
    assert "spec.judge.endpoint: not an allowed endpoint" in _try(kube, namespace, schedule)
    schedule["spec"]["judge"]["endpoint"] = "http://judge.models.svc:8000/v1"
    assert _try(kube, namespace, schedule) == ""
    binding = _web_search("https://search.example.com")
    binding["spec"] = {
        "agentRef": {"name": "contracts"},
        "type": "vector_search",
        "vectorSearch": {
            "url": "http://qdrant.data.svc:6333",
            "collection": "c",
            "reranker": {"endpoint": attacker},
        },
    }
    error = _try(kube, namespace, binding)
    assert "spec.vectorSearch.reranker.endpoint: not an allowed endpoint" in error
    # The policies have no type-checking warnings (a misspelt field would be one).
    for name in policies:
        if name.startswith("validatingadmissionpolicy/"):
            live = json.loads(kube.kubectl("get", name, "-o", "json").stdout)
            checked = (live.get("status") or {}).get("typeChecking") or {}
            assert not checked.get("expressionWarnings"), checked


def test_other_namespaces_are_not_bound(
    kube: Any, namespace: str, other_namespace: str, policies: list[str]
) -> None:
    _wait_for_policies(kube, namespace)
    assert _try(kube, other_namespace, _web_search("http://qdrant:6333")) == ""
