"""The agent's route to the API server, under an enforcing NetworkPolicy engine, on the real node.

An agent that admits ServiceAccount tokens reads the cluster issuer's JWKS from
``https://kubernetes.default.svc/openid/v1/jwks``. Its NetworkPolicy, rendered by the operator's
renderers with the API server's endpoints the operator's own code reads from EndpointSlice
``default/kubernetes`` (sleuth.operator.apiserver), must admit them: the engine
(kube-network-policies, tests/cluster/node_netpol.py) judges the connection after kube-proxy
translated the Service's ClusterIP to the endpoint.

One agent pod (the sleuth image, on the real node), two versions of its policy:

1. rendered while the operator knows no API server endpoint: no rule reaches the API server, the
   JWKS read fails (the agent's log says so) and the admitted ServiceAccount's projected token is
   refused with a 401 — the test would fail here if the engine did not police the connection;
2. rendered with the endpoints: the agent reads the JWKS, the same ServiceAccount's projected
   token gets a 200 (the audit record names the caller), and another ServiceAccount's is refused.

The callers are Jobs whose pods send the token their kubelet obtained (TokenRequest, audience the
agent's). The agent's model endpoint is a Service that does not exist: an admitted request is
answered (200, the model server unavailable) without a model, which is not what is tested here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from manifests import caller_job
from platform_kit import SMALL_NODE, build_image, eventually

from sleuth.core.kube import Kube
from sleuth.operator.apiserver import discover_api_server
from sleuth.operator.issuer import discover_issuer
from sleuth.operator.render.access import KUBE_JWKS_URL, agent_audience
from sleuth.operator.render.meta import Owner, RenderSettings
from sleuth.operator.rendercli import render_objects

pytestmark = [pytest.mark.cluster, pytest.mark.realnode, pytest.mark.slow]

AGENT = "jwks"
JWKS_FAILED = f"reading the JWKS at {KUBE_JWKS_URL} failed"
KINDS = ("NetworkPolicy", "ConfigMap", "Service", "Deployment")


def _agent_deployment(ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "AgentDeployment",
        "metadata": {"name": AGENT, "namespace": ns},
        "spec": {
            "model": {
                "endpoint": f"http://no-model.{ns}.svc:8000/v1",
                "servedModelName": "absent",
            },
            "agent": {
                "replicas": 1,
                "resources": SMALL_NODE,
                "access": {
                    "admitEvalSchedules": False,
                    "callers": [{"name": "portal", "serviceAccount": {"name": "portal"}}],
                },
            },
        },
    }


def _children(ns: str, settings: RenderSettings) -> list[dict[str, Any]]:
    """The agent's children as the operator renders them, applied without their owner (the
    AgentDeployment itself is not in this cluster)."""
    rendered = render_objects([_agent_deployment(ns)], settings)
    assert rendered.refused == []
    return [
        {**c, "metadata": {k: v for k, v in c["metadata"].items() if k != "ownerReferences"}}
        for c in rendered.children
        if c["kind"] in KINDS
    ]


def _policy(children: list[dict[str, Any]]) -> dict[str, Any]:
    return next(c for c in children if c["kind"] == "NetworkPolicy")


def _apply(real_node: Any, objects: list[dict[str, Any]]) -> None:
    body = {"apiVersion": "v1", "kind": "List", "items": objects}
    real_node.kubectl("apply", "-f", "-", input=json.dumps(body))


def _ask(real_node: Any, ns: str, job: str, account: str, image: str) -> str:
    """Run a caller Job as ``account``; what it printed ("status N")."""
    owner = Owner("AgentDeployment", AGENT, ns, "")
    url = f"http://{AGENT}-agent.{ns}.svc:8080/v1/query"
    _apply(real_node, [caller_job(job, account, agent_audience(owner), image, url, ns)])
    real_node.kubectl(
        "wait", "--for=condition=complete", f"job/{job}", "-n", ns, "--timeout=300s", timeout=330
    )
    return str(real_node.kubectl("logs", f"job/{job}", "-n", ns).stdout).strip()


def _agent_log(real_node: Any, ns: str) -> str:
    return str(
        real_node.kubectl(
            "logs", f"deployment/{AGENT}-agent", "-n", ns, "--tail=-1", check=False
        ).stdout
    )


def test_the_agent_reads_the_cluster_jwks_only_through_its_api_server_rule(
    real_node: Any, netpol_enforcer: dict[str, Any], node_namespace: str
) -> None:
    ns = node_namespace
    assert netpol_enforcer["queue_bound"]
    images = {}
    for name in ("sleuth", "testkit"):
        archive, ref = build_image(name)
        real_node.import_image(archive)
        images[name] = ref
    for account in ("portal", "intruder"):
        real_node.kubectl("create", "serviceaccount", account, "-n", ns)

    # What the operator learns at its start, by its own code.
    kube = Kube(real_node.api)
    api_server = discover_api_server(kube)
    assert api_server is not None, "EndpointSlice default/kubernetes gave no endpoint"
    slice_ = real_node.get("endpointslice", "kubernetes", "-n", "default")
    assert [f"{a}/32" for e in slice_["endpoints"] for a in e["addresses"]] == list(
        api_server.cidrs
    )
    settings = RenderSettings(
        sleuth_image=images["sleuth"],
        image_pull_policy="Never",
        workload_node_selector={"sleuth.dev/real-node": "true"},
        service_account_issuer=discover_issuer(
            kube, "https://kubernetes.default.svc.cluster.local"
        ),
        api_server=api_server,
    )
    unknown = _children(ns, RenderSettings(**{**settings.__dict__, "api_server": None}))
    known = _children(ns, settings)
    rule = {
        "to": [{"ipBlock": {"cidr": c}} for c in api_server.cidrs],
        "ports": [{"port": api_server.port, "protocol": "TCP"}],
    }
    assert rule in _policy(known)["spec"]["egress"]
    assert rule not in _policy(unknown)["spec"]["egress"]
    # Only the policy differs between the two renders.
    assert [c for c in unknown if c["kind"] != "NetworkPolicy"] == [
        c for c in known if c["kind"] != "NetworkPolicy"
    ]

    # 1. No route to the API server: the JWKS read fails, the admitted caller is refused.
    _apply(real_node, unknown)
    real_node.kubectl(
        "rollout", "status", f"deployment/{AGENT}-agent", "-n", ns, "--timeout=300s", timeout=330
    )
    eventually(
        "the agent's log: the JWKS read failed",
        lambda: JWKS_FAILED in _agent_log(real_node, ns),
        90,
    )
    assert _ask(real_node, ns, "portal-without-rule", "portal", images["testkit"]) == "status 401"

    # 2. The policy as rendered with the endpoints: the JWKS is read (the agent retries every
    # 10 s), the admitted caller is answered, another ServiceAccount refused.
    _apply(real_node, [_policy(known)])
    eventually(
        "the agent's log: the JWKS read", lambda: "JWKS read (" in _agent_log(real_node, ns), 120
    )
    said = {
        who: _ask(real_node, ns, f"{who}-with-rule", who, images["testkit"])
        for who in ("portal", "intruder")
    }
    assert said["portal"] == "status 200", said
    assert said["intruder"] in ("status 401", "status 403"), said
    records = [
        json.loads(line)
        for line in _agent_log(real_node, ns).splitlines()
        if line.startswith('{"audit"')
    ]
    answered = [r for r in records if r.get("outcome") == "answered"]
    assert [(r["caller"], r["proof"]) for r in answered] == [("portal", "token")], records
    assert answered[0]["subject"] == f"system:serviceaccount:{ns}:portal"

    after = json.loads(real_node.node("netpol", "status").stdout)
    assert after["input_divert_chain"], after  # the pods' packets to the node were judged
    assert after["verdicts"]["drop"] > 0, after
