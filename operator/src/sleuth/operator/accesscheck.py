"""The API key Secrets of ``spec.agent.access``: present and holding a key, else said on the status.

An agent whose key Secret is missing cannot start its pods (the Secret is a volume), and one
whose Secret holds no value admits nobody with a key: either way the AgentDeployment says which
field names the Secret (``SecretNotFound``, through
:func:`~sleuth.operator.reconcile_common.secret_conditions`). The operator reads the Secret to
check it exists and has data; it never reads or copies the keys.
"""

from __future__ import annotations

from dataclasses import replace

from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.core.errors import KubeRejected
from sleuth.core.kube import SECRET, Kube
from sleuth.operator.reconcile_common import FORBIDDEN, SecretCheck
from sleuth.operator.render.access import key_secret_refs


def check_key_secrets(
    kube: Kube, namespace: str, access: AccessSpec, check: SecretCheck
) -> SecretCheck:
    """``check`` with the key Secrets' problems added."""
    missing = list(check.missing)
    unverifiable = list(check.unverifiable)
    for path, name in key_secret_refs(access):
        try:
            secret = kube.get(SECRET, namespace, name)
        except KubeRejected as err:
            if err.status != FORBIDDEN:
                raise
            unverifiable.append(
                f"{path}: Secret {name} is unverifiable: the operator lacks permission to read "
                f"Secrets in namespace {namespace}; the agent's pods will not start if it is "
                "missing"
            )
            continue
        if secret is None:
            missing.append(f"{path}: Secret {name} not found (the agent's pods cannot start)")
        elif not (secret.get("data") or secret.get("stringData")):
            missing.append(f"{path}: Secret {name} holds no key (its caller is refused)")
    return replace(check, missing=missing, unverifiable=unverifiable)


__all__ = ["check_key_secrets"]
