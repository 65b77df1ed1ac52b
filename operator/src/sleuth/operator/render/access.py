"""The agent's access: ``access`` of its configuration file, and what its pods mount for it.

From ``spec.agent.access`` (:mod:`sleuth.core.api.v1alpha1.access`) and the agent's EvalSchedules:

- the cluster's ServiceAccount issuer (``RenderSettings.service_account_issuer``), with the
  agent's audience (:func:`agent_audience`), when some caller names a ServiceAccount (an
  EvalSchedule's Job or a listed caller; :func:`trusts_cluster_issuer`); the agent reads its
  JWKS from the API server (``https://kubernetes.default.svc/openid/v1/jwks``) with a projected
  token of its own ServiceAccount and the cluster's CA (``kube-root-ca.crt``), both in one
  projected volume at :data:`KUBE_API_DIR` — every ServiceAccount may read the JWKS
  (Kubernetes' default ClusterRoleBinding ``system:service-account-issuer-discovery``) — and its
  NetworkPolicy admits the API server's endpoints (render/netpol_agent.py). An agent no caller
  of which names a ServiceAccount does not read it: a ServiceAccount token is then refused as
  one of an unknown issuer;
- one caller per EvalSchedule of the agent (``admitEvalSchedules``): its Job's ServiceAccount,
  granted ``trace`` and ``evaluation``;
- the listed callers: an API key Secret is mounted whole (no ``subPath``, so the kubelet updates
  its files and keys rotate without a restart) at ``KEYS_DIR/<caller>``;
- external issuers, with the agent's audience unless they name one.

The eval Job's side (a projected token whose audience is the agent) is in
:mod:`sleuth.operator.render.evalschedule`.
"""

from __future__ import annotations

from pydantic import AnyHttpUrl

from sleuth.core.api.access_config import (
    AccessConfig,
    AuditConfig,
    CallerConfig,
    ClaimMatch,
    IssuerConfig,
    ServiceAccountRef,
    TokenMatch,
)
from sleuth.core.api.v1alpha1.access import AccessSpec
from sleuth.operator.render.evalaccess import eval_account_name
from sleuth.operator.render.meta import Manifest, Owner, RenderSettings

KUBE_API_DIR = "/var/run/secrets/sleuth/kube-api"
KEYS_DIR = "/var/run/secrets/sleuth/keys"
KUBE_JWKS_URL = "https://kubernetes.default.svc/openid/v1/jwks"
KUBE_API_VOLUME = "kube-api"
TOKEN_SECONDS = 3600


def agent_audience(owner: Owner) -> str:
    """The audience a token must name to call the agent of ``owner``."""
    return f"sleuth.dev/agent/{owner.namespace}/{owner.name}"


def eval_caller_name(schedule: str) -> str:
    return f"eval-{schedule}"[:63].rstrip("-.")


def _key_volume(caller: str) -> str:
    return f"apikey-{caller}".replace("_", "-").replace(".", "-")[:63].rstrip("-")


def access_config(
    owner: Owner,
    access: AccessSpec,
    eval_schedules: list[str],
    settings: RenderSettings,
) -> AccessConfig:
    """``access`` of the agent's file. ``eval_schedules``: the names of the agent's
    EvalSchedules (their Jobs run as ``<schedule>-eval``)."""
    audience = agent_audience(owner)
    issuers: list[IssuerConfig] = []
    for issuer in access.issuers or []:
        issuers.append(
            IssuerConfig(
                issuer=issuer.issuer,
                jwks_url=AnyHttpUrl(issuer.jwks_url),
                audiences=[issuer.audience or audience],
            )
        )
    callers: list[CallerConfig] = []
    if access.admit_eval_schedules:
        for schedule in sorted(set(eval_schedules)):
            callers.append(
                CallerConfig(
                    name=eval_caller_name(schedule),
                    service_account=ServiceAccountRef(
                        namespace=owner.namespace, name=eval_account_name(schedule)
                    ),
                    grants=["trace", "evaluation"],
                )
            )
    taken = {c.name for c in callers}
    for caller in access.callers or []:
        if caller.name in taken:  # an explicit caller named like an eval caller wins
            callers = [c for c in callers if c.name != caller.name]
        grants = list(caller.grants or [])
        if caller.api_key_secret_ref is not None:
            callers.append(
                CallerConfig(
                    name=caller.name,
                    api_key_directory=f"{KEYS_DIR}/{caller.name}",
                    grants=grants,
                )
            )
        elif caller.service_account is not None:
            account = caller.service_account
            callers.append(
                CallerConfig(
                    name=caller.name,
                    service_account=ServiceAccountRef(
                        namespace=account.namespace or owner.namespace, name=account.name
                    ),
                    grants=grants,
                )
            )
        elif caller.token is not None:
            token = caller.token
            callers.append(
                CallerConfig(
                    name=caller.name,
                    token=TokenMatch(
                        issuer=token.issuer,
                        subject=token.subject,
                        claims=[ClaimMatch(name=c.name, value=c.value) for c in token.claims or []],
                    ),
                    grants=grants,
                )
            )
    if any(c.service_account is not None for c in callers):
        issuers.insert(
            0,
            IssuerConfig(
                issuer=settings.service_account_issuer,
                jwks_url=AnyHttpUrl(KUBE_JWKS_URL),
                audiences=[audience],
                ca_file=f"{KUBE_API_DIR}/ca.crt",
                token_file=f"{KUBE_API_DIR}/token",
                service_accounts=True,
            ),
        )
    return AccessConfig(
        issuers=issuers, callers=callers, audit=AuditConfig(question=access.audit.question)
    )


def trusts_cluster_issuer(config: AccessConfig) -> bool:
    """Whether the agent accepts the cluster's ServiceAccount tokens (some caller names a
    ServiceAccount), and so reads the JWKS from the API server."""
    return any(issuer.service_accounts for issuer in config.issuers)


def access_volumes(access: AccessSpec) -> tuple[list[Manifest], list[Manifest]]:
    """(volumes, volumeMounts) of the agent's pod: the cluster's JWKS access and each API key
    Secret, whole."""
    volumes: list[Manifest] = [
        {
            "name": KUBE_API_VOLUME,
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": TOKEN_SECONDS}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                ]
            },
        }
    ]
    mounts: list[Manifest] = [
        {"name": KUBE_API_VOLUME, "mountPath": KUBE_API_DIR, "readOnly": True}
    ]
    for caller in access.callers or []:
        ref = caller.api_key_secret_ref
        if ref is None:
            continue
        volume = _key_volume(caller.name)
        volumes.append({"name": volume, "secret": {"secretName": ref.name}})
        mounts.append({"name": volume, "mountPath": f"{KEYS_DIR}/{caller.name}", "readOnly": True})
    return volumes, mounts


def key_secret_refs(access: AccessSpec) -> list[tuple[str, str]]:
    """(spec path, Secret name) of every API key Secret, for the operator's Secret check."""
    return [
        (f"spec.agent.access.callers[{i}].apiKeySecretRef", c.api_key_secret_ref.name)
        for i, c in enumerate(access.callers or [])
        if c.api_key_secret_ref is not None
    ]


__all__ = [
    "KEYS_DIR",
    "KUBE_API_DIR",
    "KUBE_JWKS_URL",
    "access_config",
    "access_volumes",
    "agent_audience",
    "eval_caller_name",
    "key_secret_refs",
    "trusts_cluster_issuer",
]
