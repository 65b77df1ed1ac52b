"""The agent's NetworkPolicy (see :mod:`.netpol` for the whole table).

Ingress: :func:`agent_callers` on the agent's port. Egress: DNS, the agent's tool services, its
model server, the servers named in the configuration file it is given (:func:`agent_egress_urls`)
and, when it accepts ServiceAccount tokens, the API server (:func:`api_server_rules`).

**The API server.** An agent some caller of which names a ServiceAccount (its EvalSchedules'
Jobs, a listed caller) reads the cluster issuer's JWKS from
``https://kubernetes.default.svc/openid/v1/jwks``. A NetworkPolicy sees that connection after
the ``kubernetes`` Service's ClusterIP has been translated to one of the API server's own
addresses, so the rule names those (``RenderSettings.api_server``: the endpoints of Service
``default/kubernetes``, or the chart's ``networkPolicy.apiServer``) as ipBlocks on their port.
When the operator does not know them the rule is left out — the agent then refuses every
ServiceAccount token where policies are enforced (fail closed) — and the AgentDeployment says so
(:func:`api_server_unknown`, condition ``Degraded``, reason ``APIServerUnknown``).
"""

from __future__ import annotations

from sleuth.core.api.access_config import AccessConfig
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.operator.render.access import trusts_cluster_issuer
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
    return _egress_urls(agent_config(owner, spec, bindings, settings), spec, settings)


def _egress_urls(
    config: AgentConfig, spec: AgentDeploymentSpec, settings: RenderSettings
) -> list[str]:
    urls = [] if spec.model.serves else [str(config.model.endpoint)]
    online = config.online_eval
    if online.judge is not None:
        urls.append(str(online.judge.endpoint))
    if online.embeddings.endpoint is not None:
        urls.append(str(online.embeddings.endpoint))
    tracing = effective_tracing(spec.agent.tracing, settings.tracing)
    jwks = [issuer.jwks_url for issuer in spec.agent.access.issuers or []]
    return urls + tracing_urls(tracing) + jwks


def api_server_rules(access: AccessConfig | None, settings: RenderSettings) -> list[Rule]:
    """Egress to the API server's endpoints, for the cluster issuer's JWKS: only when the agent
    accepts ServiceAccount tokens, and only when the operator knows the endpoints."""
    server = settings.api_server
    if server is None or access is None or not trusts_cluster_issuer(access):
        return []
    return [{"to": [{"ipBlock": {"cidr": c}} for c in server.cidrs], "ports": [tcp(server.port)]}]


def api_server_unknown(access: AccessConfig | None, settings: RenderSettings) -> str | None:
    """Why the agent's ServiceAccount callers are refused where policies are enforced, or None:
    it accepts ServiceAccount tokens but the operator does not know the API server's endpoints."""
    if access is None or settings.api_server is not None or not trusts_cluster_issuer(access):
        return None
    callers = ", ".join(c.name for c in access.callers if c.service_account is not None)
    return (
        "the agent's NetworkPolicy admits no route to the API server, whose addresses the "
        "operator does not know (set the chart's networkPolicy.apiServer, or let the operator "
        "read EndpointSlice default/kubernetes): where NetworkPolicies are enforced the agent "
        "cannot read the cluster's JWKS and refuses the ServiceAccount tokens of its callers "
        f"{callers}"
    )


def agent_network_policy(
    owner: Owner,
    spec: AgentDeploymentSpec,
    bindings: list[Binding],
    settings: RenderSettings,
    eval_schedules: list[str] | None = None,
) -> Manifest:
    """The agent's policy: called by :func:`agent_callers`; calls DNS, its tool services, its
    model server, :func:`agent_egress_urls` and :func:`api_server_rules` (``eval_schedules``:
    the agent's EvalSchedules, whose Jobs it admits by their ServiceAccounts)."""
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
    config = agent_config(owner, spec, bindings, settings, eval_schedules)
    for url in _egress_urls(config, spec, settings):
        egress += url_peers(url, settings)
    egress += api_server_rules(config.access, settings)
    return network_policy(
        agent_name(owner),
        owner,
        "agent",
        owner.name,
        selector_labels("agent", owner.name),
        ingress,
        dedupe(egress),
    )


__all__ = [
    "agent_callers",
    "agent_egress_urls",
    "agent_network_policy",
    "api_server_rules",
    "api_server_unknown",
]
