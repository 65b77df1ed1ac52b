"""sleuth's NetworkPolicies, enforced on the real node by SIG Network's kube-network-policies.

The policies are what ``sleuth render`` prints (the operator's renderers) for an AgentDeployment
serving its model, a web_search ToolBinding whose provider lives in another namespace, and an
EvalSchedule; only the NetworkPolicies are applied. Probe pods (tests/cluster/images/probe) stand
in for each workload, carrying the labels of the rendered pod templates, plus a stranger in the
same namespace, a provider and a decoy in two other namespaces. Each check asks one pod (from the
host, which the engine does not police: root's traffic) to open a TCP connection to another and
fetch a page: real packets between pods on the CNI bridge, a SYN the engine drops or accepts.

The engine's verdicts reach the kernel through the iptables NFQUEUE rules of node_netpol.py (this
kernel refuses its own nftables ``queue`` rules): see that module for exactly what differs.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from realnode_kit import RealNodeCluster, eventually

from sleuth.operator.render.meta import RenderSettings
from sleuth.operator.rendercli import render_objects

pytestmark = [pytest.mark.cluster, pytest.mark.realnode, pytest.mark.slow]

CONNECT_TIMEOUT_S = 10  # the probe's own client timeout: a dropped SYN fails after it


def _resources(ns: str, provider_ns: str) -> list[dict[str, Any]]:
    meta = {"namespace": ns}
    return [
        {
            "apiVersion": "sleuth.dev/v1alpha1",
            "kind": "AgentDeployment",
            "metadata": {"name": "shop", **meta},
            "spec": {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"}, "agent": {}},
        },
        {
            "apiVersion": "sleuth.dev/v1alpha1",
            "kind": "ToolBinding",
            "metadata": {"name": "shop-web", **meta},
            "spec": {
                "agentRef": {"name": "shop"},
                "type": "web_search",
                "webSearch": {
                    "url": f"http://search.{provider_ns}.svc:80",
                    "allowExternal": True,
                },
            },
        },
        {
            "apiVersion": "sleuth.dev/v1alpha1",
            "kind": "EvalSchedule",
            "metadata": {"name": "shop-nightly", **meta},
            "spec": {
                "agentRef": {"name": "shop"},
                "schedule": "0 3 * * *",
                "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            },
        },
    ]


def _pod_labels(children: list[dict[str, Any]], kind: str, name: str) -> dict[str, str]:
    obj = next(c for c in children if c["kind"] == kind and c["metadata"]["name"] == name)
    spec = obj["spec"]["jobTemplate"]["spec"] if kind == "CronJob" else obj["spec"]
    labels: dict[str, str] = spec["template"]["metadata"]["labels"]
    return labels


def _probe_pod(
    real_node: RealNodeCluster, ns: str, name: str, labels: dict[str, str], port: int
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65532},
            "automountServiceAccountToken": False,
            "containers": [
                {
                    "name": "probe",
                    "image": real_node.images["probe"],
                    "imagePullPolicy": "Never",
                    "args": ["serve", "-addr", f":{port}"],
                    "ports": [{"containerPort": port}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1},
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        },
    }


def _service(ns: str, name: str, selector: dict[str, str], port: int, target: int) -> Any:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": selector, "ports": [{"port": port, "targetPort": target}]},
    }


@pytest.fixture
def namespaces(real_node: RealNodeCluster) -> Iterator[tuple[str, str, str]]:
    """The test's namespace, the provider's and a decoy's; deleted afterwards."""
    suffix = uuid.uuid4().hex[:6]
    names = (f"np-{suffix}", f"np-provider-{suffix}", f"np-elsewhere-{suffix}")
    for name in names:
        real_node.kubectl("create", "namespace", name)
    try:
        yield names
    finally:
        for name in names:
            real_node.kubectl("delete", "namespace", name, "--wait=false", check=False)


class Pods:
    """Probe pods by role, and a way to make one of them connect to another."""

    def __init__(self, real_node: RealNodeCluster, pods: dict[str, tuple[str, str, int]]):
        self.real_node = real_node
        self.pods = pods  # role -> (namespace, pod name, port)
        self.ips: dict[str, str] = {}

    def wait_ready(self) -> None:
        for role, (ns, name, _port) in self.pods.items():
            self.real_node.kubectl(
                "wait",
                "--for=condition=Ready",
                f"pod/{name}",
                "-n",
                ns,
                "--timeout=180s",
                timeout=200,
            )
            self.ips[role] = self.real_node.get("pod", name, "-n", ns)["status"]["podIP"]

    def url(self, role: str, via: str | None = None) -> str:
        """The URL of ``role``'s pod (by IP), or of a Service name ``via``."""
        return via or f"http://{self.ips[role]}:{self.pods[role][2]}/"

    def fetch(self, source: str, target_url: str) -> tuple[int, str]:
        """``source``'s pod fetches ``target_url``: (HTTP status of its /get, body)."""
        query = urllib.parse.urlencode({"url": target_url})
        url = f"http://{self.ips[source]}:{self.pods[source][2]}/get?{query}"
        try:
            with urllib.request.urlopen(url, timeout=CONNECT_TIMEOUT_S + 15) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()


def test_rendered_policies_are_enforced_between_pods(
    real_node: RealNodeCluster, netpol_enforcer: dict[str, Any], namespaces: tuple[str, str, str]
) -> None:
    enforcer = netpol_enforcer
    ns, provider_ns, elsewhere_ns = namespaces
    assert enforcer["running"]
    assert enforcer["queue_bound"]
    # The engine's own nftables rules end in `queue`, which this kernel lacks: refused whole.
    assert enforcer["nft_table"] in (False, None)

    rendered = render_objects(_resources(ns, provider_ns), RenderSettings())
    assert rendered.refused == []
    children = rendered.children
    # Applied without their owners (the resources themselves are not in this cluster).
    policies = [
        {**c, "metadata": {k: v for k, v in c["metadata"].items() if k != "ownerReferences"}}
        for c in children
        if c["kind"] == "NetworkPolicy"
    ]
    assert {p["metadata"]["name"] for p in policies} == {
        "shop-model",
        "shop-agent",
        "shop-web-tool",
        "shop-nightly-eval",
    }
    roles = {
        "agent": (_pod_labels(children, "Deployment", "shop-agent"), 8080),
        "model": (_pod_labels(children, "Deployment", "shop-model"), 8000),
        "tool": (_pod_labels(children, "Deployment", "shop-web-tool"), 8080),
        "eval": (_pod_labels(children, "CronJob", "shop-nightly-eval"), 8080),
        "stranger": ({"app": "stranger"}, 8080),
    }
    objects: list[dict[str, Any]] = [
        _probe_pod(real_node, ns, role, labels, port) for role, (labels, port) in roles.items()
    ]
    objects += [
        _probe_pod(real_node, provider_ns, "search", {"app": "search"}, 8080),
        _service(provider_ns, "search", {"app": "search"}, 80, 8080),
        _probe_pod(real_node, elsewhere_ns, "decoy", {"app": "decoy"}, 8080),
        _service(elsewhere_ns, "decoy", {"app": "decoy"}, 80, 8080),
    ]
    real_node.kubectl(
        "apply", "-f", "-", input=json.dumps({"kind": "List", "apiVersion": "v1", "items": objects})
    )
    pods = Pods(
        real_node,
        {
            **{role: (ns, role, port) for role, (_labels, port) in roles.items()},
            "search": (provider_ns, "search", 8080),
            "decoy": (elsewhere_ns, "decoy", 8080),
        },
    )
    pods.wait_ready()

    # Control: the enforcer runs, no policy yet — the stranger reaches the model server.
    status, body = pods.fetch("stranger", pods.url("model"))
    assert status == 200, body
    assert body.strip() == "probe model"

    real_node.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"kind": "List", "apiVersion": "v1", "items": policies}),
    )
    search = f"http://search.{provider_ns}.svc:80/"
    decoy = f"http://decoy.{elsewhere_ns}.svc:80/"
    allowed = [
        ("agent", pods.url("model"), "the agent calls its model server"),
        ("eval", pods.url("model"), "an eval Job calls the model server"),
        ("agent", pods.url("tool"), "the agent calls its tool service"),
        ("stranger", pods.url("agent"), "a pod of the namespace calls the agent"),
        ("tool", search, "the tool service calls its provider (another namespace, by name)"),
    ]
    refused = [
        ("stranger", pods.url("model"), "a pod outside the policy calls the model server"),
        ("stranger", pods.url("tool"), "a pod outside the policy calls the tool service"),
        ("stranger", pods.url("eval"), "anything calls an eval Job"),
        ("decoy", pods.url("agent"), "a pod of another namespace calls the agent"),
        ("tool", decoy, "the tool service calls a server that is not its backend"),
        ("tool", pods.url("stranger"), "the tool service calls a pod of its own namespace"),
        ("agent", decoy, "the agent calls a server outside its list"),
    ]

    def outcome(check: tuple[str, str, str]) -> tuple[int, str]:
        return pods.fetch(check[0], check[1])

    def all_as_expected() -> bool:
        with ThreadPoolExecutor(max_workers=len(allowed) + len(refused)) as pool:
            got = list(pool.map(outcome, allowed + refused))
        ok = [s == 200 for s, _ in got[: len(allowed)]] + [s != 200 for s, _ in got[len(allowed) :]]
        wrong = [c[2] for c, good in zip(allowed + refused, ok, strict=True) if not good]
        assert not wrong, f"not as the policies say: {wrong}; got {got}"
        return True

    eventually("every allowed peer gets through, every other is refused", all_as_expected, 120, 1)

    # The verdicts were the engine's (its log counts them), read from the NFQUEUE the iptables
    # rules feed; its own nftables rules were refused by the kernel and no table exists.
    after = json.loads(real_node.node("netpol", "status").stdout)
    assert after["queue_bound"]
    assert after["nft_sync_refused"]
    assert after["nft_table"] in (False, None)
    assert after["verdicts"]["drop"] > 0, after
    assert after["verdicts"]["accept"] > 0, after
