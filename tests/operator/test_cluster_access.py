"""Real identities from the test control plane: ServiceAccount tokens issued by TokenRequest
(``kubectl create token``) and checked by ``sleuth agent`` against the API server's own JWKS;
and the operator's side — the access it renders, the audience on the status, a missing key
Secret reported with its field named."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from sleuth.operator.apiserver import slice_api_server
from sleuth.scripted import Scenario, ScriptedServer
from tests.agent.agent_doubles import SEED_QUESTION, seed_tools, seed_turns
from tests.agent.agent_process import AgentProcess
from tests.operator.operator_testkit import OperatorProcess, example
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster


def _cluster_endpoint(kube: Any, workdir: Path) -> tuple[str, Path]:
    """The API server's URL and its CA bundle (from the kubeconfig)."""
    config = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = workdir / "ca.crt"
    if "certificate-authority-data" in cluster:
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    else:
        ca.write_bytes(Path(cluster["certificate-authority"]).read_bytes())
    return cluster["server"].rstrip("/"), ca


def _token(kube: Any, namespace: str, account: str, *args: str) -> str:
    out = kube.kubectl("create", "token", account, "-n", namespace, *args).stdout
    return str(out).strip()


@pytest.fixture
def cluster_agent(kube: Any, namespace: str, tmp_path: Path) -> Iterator[tuple[AgentProcess, str]]:
    """``sleuth agent`` admitting the ServiceAccount ``evaluator`` of ``namespace`` by its token,
    reading the cluster's JWKS as the agent's pod would: with a token of its own ServiceAccount
    (``agent-reader``) and the cluster's CA."""
    for account in ("evaluator", "bystander", "agent-reader"):
        kube.kubectl("create", "serviceaccount", account, "-n", namespace)
    server, ca = _cluster_endpoint(kube, tmp_path)
    discovery = json.loads(kube.kubectl("get", "--raw", "/.well-known/openid-configuration").stdout)
    reader = tmp_path / "reader-token"
    reader.write_text(_token(kube, namespace, "agent-reader"))
    audience = f"sleuth.dev/agent/{namespace}/contracts"
    access = {
        "issuers": [
            {
                "issuer": discovery["issuer"],
                "jwksUrl": f"{server}/openid/v1/jwks",
                "caFile": str(ca),
                "tokenFile": str(reader),
                "audiences": [audience],
                "serviceAccounts": True,
            }
        ],
        "callers": [
            {
                "name": "eval",
                "serviceAccount": {"namespace": namespace, "name": "evaluator"},
                "grants": ["trace", "evaluation"],
            }
        ],
    }
    with ScriptedServer(Scenario(turns=seed_turns())) as model:
        config = {
            "model": {"endpoint": model.url, "servedModelName": "scripted"},
            "tools": seed_tools(),
            "planner": {"fallbackToRouter": False},
            "access": access,
        }
        with AgentProcess(config, tmp_path, name="contracts") as agent:
            yield agent, audience


def _ask(url: str, token: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/query",
        json={"question": SEED_QUESTION},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def test_a_service_account_token_for_the_agent_is_admitted_and_others_are_refused(
    kube: Any, namespace: str, cluster_agent: tuple[AgentProcess, str]
) -> None:
    agent, audience = cluster_agent
    admitted = _ask(agent.url, _token(kube, namespace, "evaluator", "--audience", audience))
    assert admitted.status_code == 200, admitted.text + agent.output()
    assert admitted.json()["trace"]["steps"]  # granted the trace
    refused = {
        "another ServiceAccount": _token(kube, namespace, "bystander", "--audience", audience),
        "the API server's audience": _token(kube, namespace, "evaluator"),
        "another agent's audience": _token(
            kube, namespace, "evaluator", "--audience", f"sleuth.dev/agent/{namespace}/other"
        ),
    }
    for what, token in refused.items():
        assert _ask(agent.url, token).status_code == 401, what
    log = agent.log.read_text()
    records = [json.loads(line) for line in log.splitlines() if line.startswith('{"audit"')]
    answered = [r for r in records if r["outcome"] == "answered"]
    assert answered[-1]["caller"] == "eval"
    assert answered[-1]["subject"] == f"system:serviceaccount:{namespace}:evaluator"
    for token in refused.values():
        assert token not in log


AGENT = example("AgentDeployment", "contracts")[0]


def test_the_operator_renders_access_and_reports_a_missing_key_secret(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    doc = copy.deepcopy(AGENT)
    doc["metadata"] = {"name": "keys", "namespace": namespace}
    doc["spec"]["model"] = {
        "endpoint": "http://model.models.svc:8000/v1",
        "servedModelName": "m",
    }
    doc["spec"]["agent"] = {
        "access": {
            "callers": [
                {"name": "portal", "serviceAccount": {"name": "portal"}},
                {"name": "dashboard", "apiKeySecretRef": {"name": "dashboard-keys"}},
            ]
        }
    }
    kube.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc))

    def get(kind: str, name: str) -> dict[str, Any] | None:
        done = kube.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
        return json.loads(done.stdout) if done.returncode == 0 else None

    def reported(reason: str) -> Any:
        def check() -> dict[str, Any] | None:
            obj = get("agentdeployment", "keys") or {}
            conditions = obj.get("status", {}).get("conditions", [])
            ready = {c["type"]: c for c in conditions}.get("Ready")
            return obj if ready and ready["reason"] == reason else None

        return check

    # Missing: reported with the field named, and nothing rendered (fail closed).
    obj = eventually(reported("SecretNotFound"), 60, "SecretNotFound on the AgentDeployment")
    ready = {c["type"]: c for c in obj["status"]["conditions"]}["Ready"]
    assert (
        "spec.agent.access.callers[1].apiKeySecretRef: Secret dashboard-keys not found"
        in (ready["message"])
    )
    assert get("deployment", "keys-agent") is None
    # Present but not opted in: refused too, naming the annotation entry.
    kube.kubectl(
        "create", "secret", "generic", "dashboard-keys", "-n", namespace,
        "--from-literal=key-1=0123456789abcdef0123",
    )  # fmt: skip
    obj = eventually(reported("SecretNotAllowed"), 60, "SecretNotAllowed on the AgentDeployment")
    ready = {c["type"]: c for c in obj["status"]["conditions"]}["Ready"]
    assert "AgentDeployment/caller-api-keys" in ready["message"]
    assert get("deployment", "keys-agent") is None
    kube.kubectl(
        "annotate", "secret", "dashboard-keys", "-n", namespace,
        "sleuth.dev/allowed-uses=AgentDeployment/caller-api-keys",
    )  # fmt: skip
    eventually(lambda: get("configmap", "keys-agent"), 60, "the agent rendered once opted in")
    obj = get("agentdeployment", "keys") or {}
    assert obj["status"]["agentAudience"] == f"sleuth.dev/agent/{namespace}/keys"
    config = get("configmap", "keys-agent") or {}
    file = yaml.safe_load(config["data"]["config.yaml"])
    callers = {c["name"]: c for c in file["access"]["callers"]}
    assert callers["portal"]["serviceAccount"] == {"namespace": namespace, "name": "portal"}
    assert callers["dashboard"]["apiKeyDirectory"] == "/var/run/secrets/sleuth/keys/dashboard"
    (issuer,) = file["access"]["issuers"]
    assert issuer["serviceAccounts"]
    assert issuer["audiences"] == [f"sleuth.dev/agent/{namespace}/keys"]
    discovery = json.loads(kube.kubectl("get", "--raw", "/.well-known/openid-configuration").stdout)
    assert issuer["issuer"] == discovery["issuer"]  # read from the API server at start
    deployment = eventually(lambda: get("deployment", "keys-agent"), 60, "the agent Deployment")
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["apikey-dashboard"]["secret"]["secretName"] == "dashboard-keys"
    assert "items" not in volumes["apikey-dashboard"]["secret"]  # whole: keys rotate in place
    # The agent admits a ServiceAccount: its policy reaches the API server's endpoints, which
    # the operator read from EndpointSlice default/kubernetes at its start (apiserver.py).
    endpoints = slice_api_server(
        json.loads(kube.kubectl("get", "endpointslice", "kubernetes", "-n", "default",
                                "-o", "json").stdout)
    )  # fmt: skip
    assert endpoints is not None
    policy = get("networkpolicy", "keys-agent") or {}
    assert {
        "to": [{"ipBlock": {"cidr": c}} for c in endpoints.cidrs],
        "ports": [{"port": endpoints.port, "protocol": "TCP"}],
    } in policy["spec"]["egress"]
    degraded = {c["type"]: c for c in obj["status"]["conditions"]}.get("Degraded", {})
    assert degraded.get("reason") != "APIServerUnknown", degraded
