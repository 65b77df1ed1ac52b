"""The chart hands the same allowlists to its admission policies and to the operator: what
`helm template` renders into the policies' variables is what the operator's flags say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.charts.chart_testkit import VALUE_SETS, documents, find, operator_args, template

pytestmark = pytest.mark.unit


def _variables(policy: dict[str, Any]) -> dict[str, Any]:
    """The policy's variables, each a CEL literal that is also JSON."""
    return {v["name"]: json.loads(v["expression"]) for v in policy["spec"]["variables"]}


def _flag(args: list[str], name: str) -> list[str]:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"--{name}=")]
    return [e for e in value.split(",") if e]


def test_the_policies_and_the_operator_get_the_same_lists(helm: Path) -> None:
    docs = documents(
        template(
            helm,
            None,
            "admission.allowedHosts={https://search.example.com,https://*.trusted.example}",
            "admission.imageRepositories={registry.example.com/ml/*}",
            "admission.clusterDomain=corp.local",
            "modelImage=mirror.example.com/vllm/vllm-openai@sha256:" + "0" * 64,
        )
    )
    policies = find(docs, "ValidatingAdmissionPolicy")
    assert sorted(p["metadata"]["name"] for p in policies) == [
        "sleuth-agentdeployments-allowlists",
        "sleuth-evalschedules-allowlists",
        "sleuth-toolbindings-allowlists",
    ]
    args = operator_args(docs)
    for policy in policies:
        variables = _variables(policy)
        assert variables["allowedHosts"] == _flag(args, "allowed-hosts")
        assert variables["clusterDomain"] == "corp.local" == _flag(args, "cluster-domain")[0]
        # The operator adds its own images' repositories itself (--image, --model-image).
        assert variables["allowedRepositories"] == [
            "ghcr.io/sleuth-dev/sleuth",
            *_flag(args, "allowed-image-repositories"),
            "mirror.example.com/vllm/vllm-openai",
        ]
    bindings = find(docs, "ValidatingAdmissionPolicyBinding")
    assert {b["spec"]["policyName"] for b in bindings} == {p["metadata"]["name"] for p in policies}
    assert all(b["spec"]["validationActions"] == ["Deny"] for b in bindings)
    assert all("matchResources" not in b["spec"] for b in bindings)  # cluster-wide: everywhere


def test_namespace_scoped_policies_bind_the_watched_namespaces_only(helm: Path) -> None:
    docs = documents(template(helm, VALUE_SETS["namespaced"]))
    for binding in find(docs, "ValidatingAdmissionPolicyBinding"):
        (match,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        assert match == {
            "key": "kubernetes.io/metadata.name",
            "operator": "In",
            "values": ["team-a", "team-b"],
        }


def test_the_policies_can_be_left_out(helm: Path) -> None:
    docs = documents(template(helm, None, "admission.policies=false"))
    assert not find(docs, "ValidatingAdmissionPolicy")
    assert not find(docs, "ValidatingAdmissionPolicyBinding")
    assert _flag(operator_args(docs), "allowed-image-repositories") == [
        "vllm/vllm-openai",
        "docker.io/vllm/vllm-openai",
    ]
