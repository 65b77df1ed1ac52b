"""Default-deny networking: the NetworkPolicy of every pod the operator renders.

Each policy selects one workload's pods and lists the only peers it admits; a pod a policy
selects is isolated in the directions the policy names (``policyTypes``), so anything not listed
is refused once a NetworkPolicy implementation enforces it.

====================  =====================================  =====================================
pods                  ingress admitted                       egress admitted
====================  =====================================  =====================================
agent                 :func:`agent_callers`: for now every   DNS; its tool services; its model
                      pod of its namespace (its eval Jobs    server (or ``spec.model.endpoint``);
                      included) on its port                  the online-eval judge and embeddings
                                                             endpoints; the tracing endpoint; the
                                                             API server's endpoints when it admits
                                                             ServiceAccount tokens (netpol_agent)
model server (vLLM)   its agent's pods and its eval Jobs'    not restricted (weights are
                      pods, on the model port                downloaded from Hugging Face)
tool service          its agent's pods, on its port          DNS; its backend (:func:`backend_urls`)
eval Job              nothing                                not restricted (it writes its status
                                                             to the API server, whose address is
                                                             the cluster's own)
====================  =====================================  =====================================

``settings.metrics_peers`` (the chart's ``networkPolicy.metricsFrom``, e.g. the monitoring
namespace) are admitted as well to the agent, model server and tool service ports, so that
Prometheus can scrape them; the operator's own pod has the chart's policy.

An endpoint URL becomes peers by its host (:func:`url_peers`): an IP literal is admitted on the
URL's port; a Service name the cluster resolves (``name``, ``name.namespace``,
``name.namespace.svc``, ``name.namespace.svc.<cluster domain>``) admits every pod of that
namespace on any port (the Service's target port is not in the URL); any other host admits the
URL's port at any address (a name resolves to addresses a policy cannot know). DNS is admitted on
port 53 (UDP and TCP) at any address: clusters run their resolver as pods, on the node, or
behind a node-local cache. A PostgreSQL connection URI is in a Secret the operator does not read:
a ``sql_query`` tool service may reach PostgreSQL's port (5432) at any address.
"""

from __future__ import annotations

import copy
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.operator.render.meta import (
    AGENT_LABEL,
    Component,
    Manifest,
    Owner,
    RenderSettings,
    metadata,
    selector_labels,
)
from sleuth.operator.render.model import model_name
from sleuth.operator.render.tracing import Tracing

NAMESPACE_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the apiserver
DNS_PORT = 53
POSTGRES_PORT = 5432
ANY_IPV4 = "0.0.0.0/0"
ANY_IPV6 = "::/0"

Peer = dict[str, Any]
Rule = dict[str, Any]


def parse_peers(text: str) -> list[Peer]:
    """NetworkPolicy peers from JSON (``--network-policy-metrics-from``); empty text: none.
    :class:`ValueError` says what is wrong."""
    if not text.strip():
        return []
    try:
        peers = json.loads(text)
    except ValueError as err:
        raise ValueError(f"not valid JSON: {err}") from None
    keys = {"podSelector", "namespaceSelector", "ipBlock"}
    if not isinstance(peers, list) or not all(
        isinstance(p, dict) and p and set(p) <= keys for p in peers
    ):
        raise ValueError(
            "expected a JSON list of NetworkPolicy peers (podSelector, namespaceSelector, "
            'ipBlock), e.g. [{"namespaceSelector": {"matchLabels": '
            '{"kubernetes.io/metadata.name": "monitoring"}}}]'
        )
    return peers


def tcp(port: int | str) -> dict[str, Any]:
    return {"port": port, "protocol": "TCP"}


def dns_rule() -> Rule:
    """Egress to a DNS resolver: port 53, UDP and TCP, at any address."""
    return {"ports": [{"port": DNS_PORT, "protocol": "UDP"}, tcp(DNS_PORT)]}


def pods_of(component: Component, instance: str) -> Peer:
    """The pods of one workload (its selector labels), in the policy's namespace."""
    return {"podSelector": {"matchLabels": selector_labels(component, instance)}}


def eval_pods_of(agent: str) -> Peer:
    """The pods of every EvalSchedule's runs that evaluate ``agent``, in its namespace."""
    return {
        "podSelector": {"matchLabels": {"app.kubernetes.io/component": "eval", AGENT_LABEL: agent}}
    }


def namespace_peer(namespace: str) -> Peer:
    """Every pod of ``namespace``."""
    return {"namespaceSelector": {"matchLabels": {NAMESPACE_LABEL: namespace}}}


def any_address() -> list[Peer]:
    return [{"ipBlock": {"cidr": ANY_IPV4}}, {"ipBlock": {"cidr": ANY_IPV6}}]


def _port_of(url: str) -> int:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # out of range: nothing listens there; admit the scheme's port
        port = None
    if port is not None:
        return port
    return 443 if parts.scheme == "https" else 80


def url_peers(url: str, settings: RenderSettings) -> list[Rule]:
    """Egress rules admitting the server at ``url`` (see the module docstring); a bare Service
    name resolves in the policy's own namespace."""
    host = (urlsplit(url).hostname or "").rstrip(".")
    port = _port_of(url)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        prefix = 32 if address.version == 4 else 128
        return [{"to": [{"ipBlock": {"cidr": f"{address}/{prefix}"}}], "ports": [tcp(port)]}]
    labels = host.split(".")
    suffixes = ("svc", f"svc.{settings.cluster_domain}")
    if len(labels) == 1:  # a Service of the namespace itself
        return [{"to": [{"podSelector": {}}]}]
    if len(labels) >= 3 and ".".join(labels[2:]) in suffixes:
        return [{"to": [namespace_peer(labels[1])]}]
    outside = {"to": any_address(), "ports": [tcp(port)]}
    if len(labels) == 2:  # name.namespace through the search path, or a public name
        return [{"to": [namespace_peer(labels[1])]}, outside]
    return [outside]


def network_policy(
    name: str,
    owner: Owner,
    component: Component,
    agent: str,
    selector: dict[str, str],
    ingress: list[Rule] | None,
    egress: list[Rule] | None,
) -> Manifest:
    """A NetworkPolicy; ``None`` leaves a direction open, ``[]`` admits nothing in it."""
    spec: dict[str, Any] = {"podSelector": {"matchLabels": selector}, "policyTypes": []}
    # An empty rule list (deny all) is left out: the apiserver stores it as absent, and the
    # rendered object must equal the stored one, or a restarted operator would write it again.
    if ingress is not None:
        spec["policyTypes"].append("Ingress")
        if ingress:
            spec["ingress"] = ingress
    if egress is not None:
        spec["policyTypes"].append("Egress")
        if egress:
            spec["egress"] = egress
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(name, owner, component, agent),
        "spec": spec,
    }


def tracing_urls(tracing: Tracing) -> list[str]:
    """The tracing endpoint, when tracing is on."""
    return [tracing.endpoint] if tracing.enabled else []


def dedupe(rules: list[Rule]) -> list[Rule]:
    """``rules`` without repeats, in order."""
    out: list[Rule] = []
    for rule in rules:
        if rule not in out:
            out.append(rule)
    return out


def with_scrapers(peers: list[Peer], settings: RenderSettings) -> list[Peer]:
    return peers + copy.deepcopy(list(settings.metrics_peers))


def model_network_policy(owner: Owner, settings: RenderSettings) -> Manifest:
    """The model server's policy: its agent and its eval Jobs (and the metrics peers) only."""
    peers = [pods_of("agent", owner.name), eval_pods_of(owner.name)]
    ingress = [{"from": with_scrapers(peers, settings), "ports": [tcp(settings.model_port)]}]
    return network_policy(
        model_name(owner),
        owner,
        "model",
        owner.name,
        selector_labels("model", owner.name),
        ingress,
        None,
    )


def backend_urls(spec: ToolBindingSpec) -> list[str]:
    """The servers a tool service calls, as URLs (empty for the SQL tool, whose database is in
    a Secret, and for an embedded Qdrant)."""
    urls: list[str] = []
    if spec.web_search is not None:
        urls.append(spec.web_search.url)
    vs = spec.vector_search
    if vs is not None:
        if vs.url is not None:
            urls.append(vs.url)
        if vs.embedding is not None:
            urls.append(vs.embedding.endpoint)
        if vs.reranker is not None:
            urls.append(vs.reranker.endpoint)
    return urls


def tool_network_policy(
    name: str,
    owner: Owner,
    spec: ToolBindingSpec,
    settings: RenderSettings,
    tracing: Tracing | None = None,
) -> Manifest:
    """A tool service's policy: called by its agent only; calls DNS, its backend and the
    tracing endpoint (``tracing``: its effective settings) only."""
    agent = spec.agent_ref.name
    ingress = [
        {
            "from": with_scrapers([pods_of("agent", agent)], settings),
            "ports": [tcp(settings.tool_port)],
        }
    ]
    egress: list[Rule] = [dns_rule()]
    if spec.sql_query is not None:
        egress.append({"to": any_address(), "ports": [tcp(POSTGRES_PORT)]})
    urls = backend_urls(spec) + (tracing_urls(tracing) if tracing is not None else [])
    for url in urls:
        egress += url_peers(url, settings)
    return network_policy(
        name,
        owner,
        "tool",
        agent,
        selector_labels("tool", owner.name),
        ingress,
        dedupe(egress),
    )


def eval_network_policy(name: str, owner: Owner, agent: str) -> Manifest:
    """An EvalSchedule's run pods: nothing may connect to them."""
    return network_policy(name, owner, "eval", agent, selector_labels("eval", owner.name), [], None)


__all__ = [
    "Peer",
    "Rule",
    "backend_urls",
    "dedupe",
    "dns_rule",
    "eval_network_policy",
    "model_network_policy",
    "network_policy",
    "parse_peers",
    "pods_of",
    "tcp",
    "tool_network_policy",
    "tracing_urls",
    "url_peers",
    "with_scrapers",
]
