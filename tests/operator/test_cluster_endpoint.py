"""Endpoint-mode agents (no GPUs) and a ToolBinding moved from one agent to another."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.operator.operator_testkit import OperatorProcess, example
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster


def _agent(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {
            "model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"},
            "agent": {"replicas": 1},
        },
    }


def _tools(kube: Any, ns: str, agent: str) -> list[str]:
    out = kube.kubectl("get", "configmap", f"{agent}-agent", "-n", ns, "-o", "json", check=False)
    if out.returncode != 0:
        return ["<no config>"]
    config = yaml.safe_load(json.loads(out.stdout)["data"]["config.yaml"])
    return [t["name"] for t in config["tools"]]


def test_endpoint_agent_and_a_moved_binding(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    docs = [_agent("alpha"), _agent("beta"), example("ToolBinding", "contracts-web")[0]]
    docs[2]["spec"]["agentRef"]["name"] = "alpha"
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(docs))
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "agentdeployment/alpha",
        "agentdeployment/beta",
        "toolbinding/contracts-web",
        "--timeout=120s",
    )
    # No model server is rendered for an endpoint; the agent is pointed at it.
    assert (
        kube.kubectl("get", "deployment", "alpha-model", "-n", namespace, check=False).returncode
        != 0
    )
    alpha = json.loads(
        kube.kubectl("get", "agentdeployment", "alpha", "-n", namespace, "-o", "json").stdout
    )
    assert alpha["status"]["modelEndpoint"] == "http://vllm.models.svc:8000/v1"
    assert alpha["spec"]["model"] == {
        "endpoint": "http://vllm.models.svc:8000/v1",
        "servedModelName": "llama",
    }, "an endpoint-mode object gains no serving defaults"
    assert _tools(kube, namespace, "alpha") == ["web_search"]
    assert _tools(kube, namespace, "beta") == []

    kube.kubectl(
        "patch",
        "toolbinding",
        "contracts-web",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"agentRef":{"name":"beta"}}}',
    )
    eventually(lambda: _tools(kube, namespace, "beta") == ["web_search"], what="beta gains it")
    eventually(lambda: _tools(kube, namespace, "alpha") == [], what="alpha drops it")

    def admitted() -> str:
        policy = json.loads(
            kube.kubectl(
                "get", "networkpolicy", "contracts-web-tool", "-n", namespace, "-o", "json"
            ).stdout
        )
        labels = policy["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
        return str(labels["app.kubernetes.io/instance"])

    eventually(lambda: admitted() == "beta", what="the tool admits beta's pods only")


def test_switching_between_served_and_endpoint_model_adds_and_prunes_the_server(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(_agent("gamma")))
    kube.kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "agentdeployment/gamma", "--timeout=120s"
    )
    served = {"endpoint": None, "servedModelName": None, "name": "Qwen/Qwen2.5-7B-Instruct"}
    kube.kubectl(
        "patch",
        "agentdeployment",
        "gamma",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"model": served}}),
    )

    def model_args() -> str:
        out = kube.kubectl(
            "get",
            "deployment",
            "gamma-model",
            "-n",
            namespace,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
            check=False,
        )
        return out.stdout if out.returncode == 0 else ""

    args = eventually(model_args, what="a vLLM Deployment for the served model")
    assert '"--tool-call-parser","hermes"' in args
    kube.kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "agentdeployment/gamma", "--timeout=120s"
    )

    back = {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "qwen", "name": None}
    kube.kubectl(
        "patch",
        "agentdeployment",
        "gamma",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"model": back}}),
    )
    eventually(lambda: model_args() == "", what="the vLLM Deployment pruned")
    assert (
        kube.kubectl("get", "service", "gamma-model", "-n", namespace, check=False).returncode != 0
    )
