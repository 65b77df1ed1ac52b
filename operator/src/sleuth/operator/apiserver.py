"""Where the pods reach the Kubernetes API server, for the agents' NetworkPolicies.

An agent that admits ServiceAccount tokens reads the cluster issuer's JWKS from the API server
(render/access.py). NetworkPolicy engines match a connection after the ``kubernetes`` Service's
ClusterIP has been translated to an endpoint, so the agent's policy must admit the API server's
own addresses and port (render/netpol_agent.py). The operator learns them once at start:

1. from its flags ``--api-server-cidr`` (repeatable) and ``--api-server-port`` (read by
   :func:`sleuth.operator.settings.api_server_from_flags`) — the chart's
   ``networkPolicy.apiServer`` — when given (a control plane behind a load balancer or on
   addresses that change: name the range);
2. else from EndpointSlice ``default/kubernetes``, which the API servers keep up to date (the
   chart grants ``get`` on that one object): each ready endpoint address as a /32 (or /128);
3. else unknown: a warning now, and each AgentDeployment that admits ServiceAccount tokens reports
   ``Degraded`` (reason ``APIServerUnknown``) while its policy leaves the API server out — its
   ServiceAccount callers are refused where policies are enforced, nothing opens up.

Read once: when the control plane's addresses change, restart the operator (or name a range).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from sleuth.core.errors import SleuthError
from sleuth.core.kube import Kube, Resource
from sleuth.operator.render.meta import ApiServer

log = logging.getLogger("sleuth.operator")
ENDPOINT_SLICE = Resource("discovery.k8s.io/v1", "EndpointSlice", "endpointslices")
SLICE_NAMESPACE, SLICE_NAME = "default", "kubernetes"
HINT = "set the chart's networkPolicy.apiServer (--api-server-cidr, --api-server-port)"


def slice_api_server(endpoint_slice: dict[str, Any]) -> ApiServer | None:
    """The ready addresses and the HTTPS port of EndpointSlice ``default/kubernetes``."""
    ports = [p.get("port") for p in endpoint_slice.get("ports") or []]
    https = [p for p in endpoint_slice.get("ports") or [] if p.get("name") == "https"]
    port = (https[0] if https else {}).get("port") or (ports[0] if len(ports) == 1 else None)
    cidrs = []
    for endpoint in endpoint_slice.get("endpoints") or []:
        if (endpoint.get("conditions") or {}).get("ready") is False:
            continue
        for address in endpoint.get("addresses") or []:
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:  # an FQDN slice: nothing a policy can name
                continue
            cidrs.append(f"{ip}/{32 if ip.version == 4 else 128}")
    if not isinstance(port, int) or not cidrs:
        return None
    return ApiServer(cidrs=tuple(sorted(set(cidrs))), port=port)


def discover_api_server(kube: Kube) -> ApiServer | None:
    """The API server's endpoints from EndpointSlice ``default/kubernetes``, else None
    (logged with what to do)."""
    where = f"EndpointSlice {SLICE_NAMESPACE}/{SLICE_NAME}"
    try:
        found = kube.get(ENDPOINT_SLICE, SLICE_NAMESPACE, SLICE_NAME)
    except SleuthError as err:
        log.warning(
            "could not read %s (%s): agents that admit ServiceAccount tokens get no "
            "NetworkPolicy route to the API server; %s",
            where,
            type(err).__name__,
            HINT,
        )
        return None
    server = slice_api_server(found) if found is not None else None
    if server is None:
        log.warning(
            "%s %s: agents that admit ServiceAccount tokens get no NetworkPolicy route to the "
            "API server; %s",
            where,
            "not found" if found is None else "has no ready address and port",
            HINT,
        )
    return server


__all__ = [
    "ENDPOINT_SLICE",
    "discover_api_server",
    "slice_api_server",
]
