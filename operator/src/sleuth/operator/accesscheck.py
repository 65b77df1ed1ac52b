"""The API key Secrets of ``spec.agent.access``: opted in, present and holding a key, else said
on the status.

An agent's key Secret is mounted whole into its pods, which admit whoever presents one of its
values: so the Secret must opt in to that use (``AgentDeployment/caller-api-keys`` in its
``sleuth.dev/allowed-uses`` annotation, :mod:`sleuth.core.api.v1alpha1.secretuse`) like every other
Secret the operator uses. A missing Secret keeps the agent's pods from starting, and one that holds
no value admits nobody with a key: either way the AgentDeployment says which field names the
Secret. The operator reads the Secret to check it; it never copies or logs the keys.
"""

from __future__ import annotations

from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.core.api.v1alpha1.secretuse import ALLOWED_USES_ANNOTATION, CALLER_KEYS_USE, allows
from sleuth.core.errors import KubeRejected
from sleuth.core.kube import SECRET, Kube
from sleuth.operator.guard import FORBIDDEN, SecretVerdict
from sleuth.operator.render.access import key_secret_refs

KIND = "AgentDeployment"


def check_key_secrets(
    kube: Kube, namespace: str, access: AccessSpec, verdict: SecretVerdict
) -> SecretVerdict:
    """``verdict`` with the key Secrets sorted in: checked, missing, not allowed or
    unverifiable."""
    for path, name in key_secret_refs(access):
        where = f"{path}: Secret {name}"
        try:
            secret = kube.get(SECRET, namespace, name)
        except KubeRejected as err:
            if err.status != FORBIDDEN:
                raise
            verdict.unverifiable.append(
                f"{where} is not used: the operator may not read Secrets in namespace "
                f"{namespace}, so it cannot tell whether the Secret allows "
                f"{KIND}/{CALLER_KEYS_USE}"
            )
            continue
        if secret is None:
            verdict.missing.append(f"{where} not found (the agent's pods cannot start)")
            continue
        annotations = (secret.get("metadata") or {}).get("annotations") or {}
        if not allows(annotations, KIND, CALLER_KEYS_USE):
            verdict.not_allowed.append(
                f"{where} does not allow this use: add {KIND}/{CALLER_KEYS_USE} (or {KIND}) to "
                f"its annotation {ALLOWED_USES_ANNOTATION}"
            )
        elif not (secret.get("data") or secret.get("stringData")):
            verdict.missing.append(f"{where} holds no key (its caller is refused)")
        else:
            verdict.checked.add(name)
    return verdict


__all__ = ["check_key_secrets"]
