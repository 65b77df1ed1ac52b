"""The cluster's ServiceAccount token issuer, which every agent accepts (render/access.py).

kube-apiserver names it in ``--service-account-issuer`` and publishes it at
``/.well-known/openid-configuration`` (``issuer``), readable by every ServiceAccount (the default
ClusterRoleBinding ``system:service-account-issuer-discovery``). The operator reads it once at
start, unless ``--service-account-issuer`` gives it; when it cannot be read the default
(``https://kubernetes.default.svc.cluster.local``, kube-apiserver's own when unset) is kept and a
warning says so: the agents then refuse tokens of another issuer, they never accept more.
"""

from __future__ import annotations

import logging

from sleuth.core.errors import SleuthError
from sleuth.core.kube import Kube

log = logging.getLogger("sleuth.operator")
DISCOVERY_PATH = "/.well-known/openid-configuration"


def discover_issuer(kube: Kube, default: str) -> str:
    """The issuer the API server publishes, else ``default`` (logged)."""
    try:
        document = kube.get_json(DISCOVERY_PATH)
    except SleuthError as err:
        log.warning(
            "could not read the ServiceAccount issuer (%s): agents accept tokens of %s",
            type(err).__name__,
            default,
        )
        return default
    issuer = (document or {}).get("issuer")
    if not isinstance(issuer, str) or not issuer.startswith("https://"):
        log.warning(
            "the API server publishes no usable ServiceAccount issuer: agents accept tokens of %s",
            default,
        )
        return default
    return issuer


__all__ = ["discover_issuer"]
