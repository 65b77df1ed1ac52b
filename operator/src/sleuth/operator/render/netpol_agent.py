"""The agent's NetworkPolicy (see :mod:`.netpol` for the whole table).

Ingress: :func:`agent_callers` on the agent's port. Egress: DNS, the agent's tool services, its
model server, and the servers named in the configuration file it is given
(:func:`agent_egress_urls`).
"""

from __future__ import annotations

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.operator.render.agent import Binding, agent_config, agent_name
from sleuth.operator.render.meta import (
    AGENT_LABEL,
    Manifest,
    Owner,
    RenderSettings,
    selector_labels,
)
from sleuth.operator.render.netpol import (
    Peer,
    Rule,
    dedupe,
    dns_rule,
    network_policy,
    pods_of,
    tcp,
    tracing_urls,
    url_peers,
    with_scrapers,
)
from sleuth.operator.render.tracing import effective_tracing


def agent_callers(owner: Owner, spec: AgentDeploymentSpec) -> list[Peer]:
    """Who may call the agent's API: for now every pod of its namespace (its eval Jobs
    included). The seam for the agent's access settings: they narrow this list."""
    del owner, spec
    return [{"podSelector": {}}]


def agent_egress_urls(
    owner: Owner, spec: AgentDeploymentSpec, bindings: list[Binding], settings: RenderSettings
) -> list[str]:
    """The servers the agent calls besides its tool services and its own model server, read
    from the configuration file it is given: an endpoint model, the online evaluation's judge
    and embeddings endpoints, the tracing endpoint, the JWKS of its external token issuers."""
    config = agent_config(owner, spec, bindings, settings)
    urls = [] if spec.model.serves else [str(config.model.endpoint)]
    online = config.online_eval
    if online.judge is not None:
        urls.append(str(online.judge.endpoint))
    if online.embeddings.endpoint is not None:
        urls.append(str(online.embeddings.endpoint))
    tracing = effective_tracing(spec.agent.tracing, settings.tracing)
    jwks = [issuer.jwks_url for issuer in spec.agent.access.issuers or []]
    return urls + tracing_urls(tracing) + jwks


def agent_network_policy(
    owner: Owner, spec: AgentDeploymentSpec, bindings: list[Binding], settings: RenderSettings
) -> Manifest:
    """The agent's policy: called by :func:`agent_callers`; calls DNS, its tool services, its
    model server and :func:`agent_egress_urls`."""
    ingress = [
        {
            "from": with_scrapers(agent_callers(owner, spec), settings),
            "ports": [tcp(settings.agent_port)],
        }
    ]
    tools = {"app.kubernetes.io/component": "tool", AGENT_LABEL: owner.name}
    egress: list[Rule] = [
        dns_rule(),
        {"to": [{"podSelector": {"matchLabels": tools}}], "ports": [tcp(settings.tool_port)]},
    ]
    if spec.model.serves:
        egress.append({"to": [pods_of("model", owner.name)], "ports": [tcp(settings.model_port)]})
    for url in agent_egress_urls(owner, spec, bindings, settings):
        egress += url_peers(url, settings)
    return network_policy(
        agent_name(owner),
        owner,
        "agent",
        owner.name,
        selector_labels("agent", owner.name),
        ingress,
        dedupe(egress),
    )


__all__ = ["agent_callers", "agent_egress_urls", "agent_network_policy"]
