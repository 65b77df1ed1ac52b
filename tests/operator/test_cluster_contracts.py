"""The contracts example in the real control plane, reconciled by the operator as a host process.

Covers: children and their fields, vLLM pods on H100 nodes, ``kubectl wait`` on Ready, what
``kubectl get sleuth`` and ``kubectl explain`` show, idempotence, drift, deletion, and where answer
relevancy gets its embeddings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from sleuth.core.kube import CRON_JOB, DEPLOYMENT, Kube
from sleuth.operator.apiserver import discover_api_server
from sleuth.operator.reconcile_agent import reconcile_agent
from sleuth.operator.reconcile_common import Context
from sleuth.operator.reconcile_tool import reconcile_tool
from sleuth.operator.render.meta import RenderSettings
from tests.operator.operator_testkit import OperatorProcess
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CHILD_KINDS = "deployments,services,configmaps,networkpolicies"
EXPECTED_DEPLOYMENTS = {
    "contracts-model",
    "contracts-agent",
    "contracts-clauses-tool",
    "contracts-sql-tool",
    "contracts-web-tool",
}


def _json(kube: Any, *args: str) -> Any:
    return json.loads(kube.kubectl(*args, "-o", "json").stdout)


def _children(kube: Any, ns: str) -> dict[str, dict[str, Any]]:
    items = _json(kube, "get", CHILD_KINDS, "-n", ns, "-l", "sleuth.dev/agent=contracts")["items"]
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in items}


def _versions(kube: Any, ns: str) -> dict[str, str]:
    return {k: o["metadata"]["resourceVersion"] for k, o in _children(kube, ns).items()}


def _apply_example(kube: Any, ns: str) -> None:
    kube.kubectl("apply", "-n", ns, "-f", str(EXAMPLES))


def _ready(kube: Any, ns: str) -> None:
    kube.kubectl(
        "wait", "-n", ns, "--for=condition=Ready", "agentdeployment/contracts", "--timeout=120s"
    )


def _agent_config(kube: Any, ns: str) -> dict[str, Any]:
    cm = _json(kube, "get", "configmap", "contracts-agent", "-n", ns)
    loaded: dict[str, Any] = yaml.safe_load(cm["data"]["config.yaml"])
    return loaded


def _settled(kube: Any, ns: str) -> bool:
    status = _json(kube, "get", "agentdeployment", "contracts", "-n", ns).get("status", {})
    conds = {c["type"]: (c["status"], c["reason"]) for c in status.get("conditions", [])}
    tools = status.get("tools", [])
    return (
        conds.get("Ready") == ("True", "Ready")
        and conds.get("Progressing") == ("False", "Complete")
        and conds.get("Degraded") == ("False", "AsExpected")
        and len(tools) == 3
        and all(t["ready"] for t in tools)
    )


def test_example_converges_to_ready_with_every_child(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    _apply_example(kube, namespace)
    _ready(kube, namespace)
    kube.kubectl(
        "wait", "-n", namespace, "--for=condition=Ready", "toolbinding", "--all", "--timeout=60s"
    )
    # The agent's status follows its bindings' a moment later (their tool services' readiness).
    eventually(lambda: _settled(kube, namespace), what="every rollout complete, every tool ready")

    children = _children(kube, namespace)
    assert {k.split("/")[1] for k in children if k.startswith("Deployment/")} == (
        EXPECTED_DEPLOYMENTS
    )
    for name in EXPECTED_DEPLOYMENTS:
        assert f"Service/{name}" in children
    for tool in ("contracts-clauses-tool", "contracts-sql-tool", "contracts-web-tool"):
        assert f"NetworkPolicy/{tool}" in children
        assert f"ConfigMap/{tool}" in children
    for key, obj in children.items():
        (ref,) = obj["metadata"]["ownerReferences"]
        assert ref["controller"] is True, key
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "sleuth-operator"

    model = children["Deployment/contracts-model"]["spec"]["template"]["spec"]
    vllm = model["containers"][0]
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "4"
    assert " ".join(vllm["args"]).startswith(
        "--model meta-llama/Llama-3.1-70B-Instruct --served-model-name "
    )
    assert "--tool-call-parser llama3_json" in " ".join(vllm["args"])
    assert "--quantization fp8" in " ".join(vllm["args"])

    # vLLM pods run on simulated H100 nodes; agent and tool pods do not need GPUs.
    pods = _json(kube, "get", "pods", "-n", namespace, "-l", "app.kubernetes.io/component=model")
    assert pods["items"]
    for pod in pods["items"]:
        node = _json(kube, "get", "node", pod["spec"]["nodeName"])
        assert node["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"

    # Only the agent's pods are admitted to the tool services; only the SQL tool sees its DSN.
    policy = children["NetworkPolicy/contracts-sql-tool"]["spec"]
    admitted = policy["ingress"][0]["from"][0]["podSelector"]["matchLabels"]
    selector = ",".join(f"{k}={v}" for k, v in admitted.items())
    admitted_pods = _json(kube, "get", "pods", "-n", namespace, "-l", selector)["items"]
    assert len(admitted_pods) == 2
    assert all(p["metadata"]["name"].startswith("contracts-agent-") for p in admitted_pods)
    for key, obj in children.items():
        if key.startswith("Deployment/"):
            uses_dsn = "contracts-postgres" in json.dumps(obj["spec"])
            assert uses_dsn == (key == "Deployment/contracts-sql-tool"), key

    config = _agent_config(kube, namespace)
    assert [t["name"] for t in config["tools"]] == ["sql_query", "vector_search", "web_search"]
    assert config["model"]["endpoint"] == f"http://contracts-model.{namespace}.svc:8000/v1"

    status = _json(kube, "get", "agentdeployment", "contracts", "-n", namespace)["status"]
    assert status["agentEndpoint"] == f"http://contracts-agent.{namespace}.svc:8080/v1"
    card = f"http://contracts-agent.{namespace}.svc:8080/.well-known/agent-card.json"
    assert status["agentCardUrl"] == card
    assert config["a2a"]["publicUrl"] == f"http://contracts-agent.{namespace}.svc:8080/"
    assert [t["name"] for t in status["tools"]] == ["sql_query", "vector_search", "web_search"]
    assert all(t["ready"] for t in status["tools"])

    # What a user sees.
    table = kube.kubectl("get", "sleuth", "-n", namespace).stdout
    assert "READY" in table
    assert "MODEL" in table
    assert "GPUS" in table
    assert "TOOLS" in table
    row = next(line for line in table.splitlines() if "agentdeployment" in line)
    assert "True" in row
    assert "meta-llama/Llama-3.1-70B-Instruct" in row
    assert " 4 " in row
    assert "sql_query,vector_search,web_search" in row
    assert "AGENT" in table
    assert "TYPE" in table
    for binding in ("contracts-clauses", "contracts-sql", "contracts-web"):
        assert any(binding in line and "True" in line for line in table.splitlines())
    explain = kube.kubectl("explain", "agentdeployment.spec.model.toolCallParser").stdout
    assert "Derived from the model family" in explain
    explain = kube.kubectl("explain", "toolbinding.spec.webSearch.allowExternal").stdout
    assert "outside the cluster" in explain
    # Each transition's Event is posted right after the status write that made it.
    eventually(
        lambda: (
            "agentdeployment/contracts"
            in (e := kube.kubectl("get", "events", "-n", namespace).stdout)
            and "Ready=True" in e
        ),
        what="the Ready=True Event on the AgentDeployment",
    )


def _cronjob_pod(kube: Any, ns: str) -> dict[str, Any]:
    cron = Kube(kube.api).get(CRON_JOB, ns, "contracts-weekly-eval")
    assert cron is not None
    pod: dict[str, Any] = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return pod


def _ragas_container(kube: Any, ns: str) -> dict[str, Any] | None:
    cron = Kube(kube.api).get(CRON_JOB, ns, "contracts-weekly-eval")
    if cron is None:
        return None
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return next((c for c in pod["containers"] if c["name"] == "ragas"), None)


def _embeddings_url(kube: Any, ns: str) -> str | None:
    ragas = _ragas_container(kube, ns)
    assert ragas is not None
    args: list[str] = ragas["args"]
    return args[args.index("--embeddings-url") + 1] if "--embeddings-url" in args else None


def test_answer_relevancy_embeds_with_the_clauses_bindings_endpoint(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    """A chat-model vLLM has no /embeddings: online and scheduled evaluation both embed with
    the endpoint of the agent's vector_search binding once it names one."""
    _apply_example(kube, namespace)
    _ready(kube, namespace)
    eventually(lambda: _ragas_container(kube, namespace), what="the eval CronJob")
    # The example's clauses binding embeds with the tool service's built-in model: no endpoint
    # to share, so answer relevancy embeds with the same local model.
    assert _embeddings_url(kube, namespace) == "local"
    assert _agent_config(kube, namespace)["onlineEval"]["embeddings"]["source"] == "local"

    tei = "http://tei.data.svc:8080/v1"
    embedding = {"endpoint": tei, "model": "bge-m3"}  # an in-cluster TEI needing no key
    patch = {"spec": {"vectorSearch": {"embedding": embedding}}}
    kube.kubectl(
        "patch", "toolbinding", "contracts-clauses", "-n", namespace, "--type=merge",
        "-p", json.dumps(patch),
    )  # fmt: skip

    eventually(
        lambda: _embeddings_url(kube, namespace) == tei, what="ragas args follow the binding"
    )
    ragas = _ragas_container(kube, namespace)
    assert ragas is not None
    assert ragas["args"][ragas["args"].index("--embeddings-model") + 1] == "bge-m3"
    online = eventually(
        lambda: (
            (e := _agent_config(kube, namespace)["onlineEval"]["embeddings"])["source"]
            == "endpoint"
            and e
        ),
        what="the agent's config follows the binding",
    )
    assert online == {"source": "endpoint", "endpoint": tei, "model": "bge-m3"}

    # An endpoint behind the tool's API key is not shared: the key stays in the tool service.
    kube.kubectl(
        "create", "secret", "generic", "tei", "-n", namespace, "--from-literal=token=tei-secret"
    )
    kube.kubectl(
        "annotate", "secret", "tei", "-n", namespace,
        "sleuth.dev/allowed-uses=ToolBinding/vector_search",
    )  # fmt: skip
    keyed = {
        "spec": {
            "vectorSearch": {"embedding": {"apiKeySecretRef": {"name": "tei", "key": "token"}}}
        }
    }
    kube.kubectl(
        "patch", "toolbinding", "contracts-clauses", "-n", namespace, "--type=merge",
        "-p", json.dumps(keyed),
    )  # fmt: skip
    eventually(
        lambda: _embeddings_url(kube, namespace) == "local", what="ragas back to the local model"
    )
    eventually(
        lambda: _agent_config(kube, namespace)["onlineEval"]["embeddings"]["source"] == "local",
        what="the agent back to the local model",
    )
    agent = _json(kube, "get", "deployment", "contracts-agent", "-n", namespace)
    pods = [agent["spec"]["template"]["spec"], _cronjob_pod(kube, namespace)]
    for pod in pods:
        for container in pod["containers"]:
            refs = [(e.get("valueFrom") or {}).get("secretKeyRef") for e in container["env"]]
            assert {"name": "tei", "key": "token"} not in refs, container["name"]


def test_reapply_and_second_reconcile_change_nothing(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    _apply_example(kube, namespace)
    _ready(kube, namespace)
    # 5 Deployments, 5 Services, 4 ConfigMaps, 6 NetworkPolicies (model, agent, 3 tools, eval).
    eventually(lambda: len(_children(kube, namespace)) == 20, what="all 20 children")
    # Let the rollouts settle (the Deployment controller writes status as pods become ready).
    eventually(lambda: _settled(kube, namespace), what="every rollout complete, every tool ready")
    before = eventually(
        lambda: (v := _versions(kube, namespace)) == _versions(kube, namespace) and v,
        what="stable resourceVersions",
    )
    _apply_example(kube, namespace)
    # The operator's settings include what it reads from the cluster at start.
    api = Kube(kube.api)
    ctx = Context(kube=api, settings=RenderSettings(api_server=discover_api_server(api)))
    assert reconcile_agent(ctx, namespace, "contracts") is not None
    for binding in ("contracts-clauses", "contracts-sql", "contracts-web"):
        assert reconcile_tool(ctx, namespace, binding) is not None
    ready = _json(kube, "get", "agentdeployment", "contracts", "-n", namespace)
    rv_status = ready["metadata"]["resourceVersion"]
    assert reconcile_agent(ctx, namespace, "contracts") is not None
    assert _versions(kube, namespace) == before
    again = _json(kube, "get", "agentdeployment", "contracts", "-n", namespace)
    assert again["metadata"]["resourceVersion"] == rv_status, "status rewritten with no change"


def test_drift_is_reverted(kube: Any, namespace: str, operator: OperatorProcess) -> None:
    _apply_example(kube, namespace)
    _ready(kube, namespace)
    api = Kube(kube.api)
    old_uid = api.get(DEPLOYMENT, namespace, "contracts-agent")["metadata"]["uid"]  # type: ignore[index]
    kube.kubectl("delete", "deployment", "contracts-agent", "-n", namespace, "--wait=false")
    eventually(
        lambda: (
            (d := api.get(DEPLOYMENT, namespace, "contracts-agent"))
            and d["metadata"]["uid"] != old_uid
        ),
        what="the deleted agent Deployment comes back",
    )
    kube.kubectl(
        "patch",
        "deployment",
        "contracts-model",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"replicas":3}}',
    )
    eventually(
        lambda: api.get(DEPLOYMENT, namespace, "contracts-model")["spec"]["replicas"] == 1,  # type: ignore[index]
        what="edited replicas reverted to 1",
    )
    kube.kubectl(
        "patch",
        "configmap",
        "contracts-agent",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"data":{"config.yaml":"maxIterations: 10\\n"}}',
    )
    eventually(
        lambda: _agent_config(kube, namespace).get("maxIterations") == 5,
        what="edited agent ConfigMap restored",
    )
    _ready(kube, namespace)


def test_deleting_a_binding_drops_the_tool_and_deleting_the_agent_removes_everything(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    _apply_example(kube, namespace)
    _ready(kube, namespace)
    kube.kubectl("delete", "toolbinding", "contracts-web", "-n", namespace)
    eventually(
        lambda: not any("contracts-web-tool" in k for k in _children(kube, namespace)),
        what="the web tool service is gone",
    )
    eventually(
        lambda: (
            [t["name"] for t in _agent_config(kube, namespace)["tools"]]
            == ["sql_query", "vector_search"]
        ),
        what="the agent's config drops web_search",
    )
    eventually(
        lambda: (
            _json(kube, "get", "agentdeployment", "contracts", "-n", namespace)["status"].get(
                "toolNames"
            )
            == "sql_query,vector_search"
        ),
        what="status lists two tools",
    )

    kube.kubectl("delete", "agentdeployment", "contracts", "-n", namespace)
    eventually(lambda: _children(kube, namespace) == {}, what="every child removed")
    for binding in ("contracts-clauses", "contracts-sql"):
        eventually(
            lambda b=binding: (
                kube.kubectl(
                    "get",
                    "toolbinding",
                    b,
                    "-n",
                    namespace,
                    "-o",
                    "jsonpath={.status.conditions[?(@.type=='Ready')].reason}",
                ).stdout
                == "AgentNotFound"
            ),
            what=f"{binding} reports AgentNotFound",
        )
    # The agent comes back: the bindings heal by themselves.
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "10-agentdeployment.yaml"))
    _ready(kube, namespace)
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "toolbinding/contracts-sql",
        "toolbinding/contracts-clauses",
        "--timeout=60s",
    )
