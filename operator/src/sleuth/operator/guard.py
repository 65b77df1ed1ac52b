"""What a resource author may make the operator do: the checks run before anything is rendered.

Create rights on our kinds must not be worth more than they look. Before a reconciler renders a
resource it asks this module:

- :func:`spec_refusal`: every endpoint and image of the spec is on the platform team's
  allowlists (:mod:`sleuth.core.api.v1alpha1.allowlists`, the rules the chart's admission
  policies also enforce). A refusal is permanent until the spec changes: like an invalid spec,
  nothing is applied and nothing removed; the status names the field (``EndpointNotAllowed``,
  ``ImageNotAllowed``).
- :func:`check_secret_uses`: every Secret the rendered pods would read exists, has the key, and
  opted in to that use (:mod:`sleuth.core.api.v1alpha1.secretuse`). Otherwise the resource is not
  rendered and its children are removed, so that nothing keeps using the Secret
  (``SecretNotFound``, ``SecretNotAllowed``, or ``SecretUnverifiable`` when the operator may not
  read it: it cannot tell whether the Secret opted in, so it does not use it).
- :func:`unchecked_secrets`: the last line: a rendered pod that reads a Secret no check saw is
  never applied (a renderer bug, reported as such).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from sleuth.core.api.v1alpha1.allowlists import (
    Allowlists,
    endpoint_problem,
    image_problem,
    repository,
)
from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.secretuse import (
    AGENT_DEPLOYMENT_USES,
    ALLOWED_USES_ANNOTATION,
    SecretUse,
    allows,
)
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.errors import KubeRejected
from sleuth.core.kube import SECRET, Kube
from sleuth.operator.render.meta import RenderSettings
from sleuth.operator.status import Cond

FORBIDDEN = 403
SECRET_NOT_FOUND = "SecretNotFound"
SECRET_NOT_ALLOWED = "SecretNotAllowed"
SECRET_UNVERIFIABLE = "SecretUnverifiable"
ENDPOINT_NOT_ALLOWED = "EndpointNotAllowed"
IMAGE_NOT_ALLOWED = "ImageNotAllowed"


@dataclass(frozen=True)
class Refused:
    """Why a resource is not rendered: a stable reason and a message naming the field."""

    reason: str
    message: str

    def conditions(self) -> list[Cond]:
        return [
            Cond("Ready", "False", self.reason, self.message),
            Cond("Progressing", "False", self.reason, "not rendered: " + self.message),
            Cond("Degraded", "True", self.reason, self.message),
        ]


def allowlists(settings: RenderSettings) -> Allowlists:
    """The operator's allowlists, its own images' repositories included."""
    own = (repository(settings.sleuth_image), repository(settings.model_image))
    return dataclasses.replace(settings.allowlists, always=own)


def spec_refusal(
    model: type[BaseModel], spec: BaseModel, settings: RenderSettings
) -> Refused | None:
    """The first endpoint or image of ``spec`` outside the allowlists, or None."""
    allow = allowlists(settings)
    wire = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    problem = endpoint_problem(model, wire, allow)
    if problem:
        return Refused(ENDPOINT_NOT_ALLOWED, problem)
    problem = image_problem(model, wire, allow)
    if problem:
        return Refused(IMAGE_NOT_ALLOWED, problem)
    return None


@dataclass
class SecretVerdict:
    """The Secrets a resource's pods would read, sorted by what is wrong with them."""

    missing: list[str] = field(default_factory=list)
    not_allowed: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)  # names of the Secrets that passed

    def refusal(self) -> Refused | None:
        """The refusal (the worst reason first, every problem in the message), or None."""
        for reason, found in (
            (SECRET_NOT_ALLOWED, self.not_allowed),
            (SECRET_UNVERIFIABLE, self.unverifiable),
            (SECRET_NOT_FOUND, self.missing),
        ):
            if found:
                everything = self.not_allowed + self.unverifiable + self.missing
                return Refused(reason, "; ".join(everything))
        return None


def check_secret_uses(kube: Kube, namespace: str, uses: list[SecretUse]) -> SecretVerdict:
    """Read each Secret once; sort every use into allowed, missing, not allowed, unverifiable."""
    verdict = SecretVerdict()
    read: dict[str, dict[str, Any] | None] = {}
    forbidden: set[str] = set()
    for use in uses:
        name = use.ref.name
        if name not in read and name not in forbidden:
            try:
                read[name] = kube.get(SECRET, namespace, name)
            except KubeRejected as err:
                if err.status != FORBIDDEN:
                    raise
                forbidden.add(name)
        where = f"{use.field}: Secret {name}"
        if name in forbidden:
            verdict.unverifiable.append(
                f"{where} is not used: the operator may not read Secrets in namespace "
                f"{namespace}, so it cannot tell whether the Secret allows {use.entry}"
            )
            continue
        secret = read[name]
        if secret is None:
            verdict.missing.append(f"{where} not found")
            continue
        annotations = (secret.get("metadata") or {}).get("annotations") or {}
        if not allows(annotations, use.kind, use.use):
            verdict.not_allowed.append(
                f"{where} does not allow this use: add {use.entry} (or {use.kind}) to its "
                f"annotation {ALLOWED_USES_ANNOTATION}"
            )
        elif use.ref.key not in (secret.get("data") or {}) and use.ref.key not in (
            secret.get("stringData") or {}
        ):
            verdict.missing.append(f"{where} has no key {use.ref.key}")
        else:
            verdict.checked.add(name)
    return verdict


def agent_uses(
    agent: str, model_key: SecretKeyRef | None, tracing: TracingSpec | None
) -> list[SecretUse]:
    """The Secrets of AgentDeployment ``agent`` that reach pods of other kinds: its model API
    key (eval Jobs) and its tracing headers (tool services, eval Jobs); uses of the agent."""
    found = []
    headers = tracing.headers_secret_ref if tracing is not None else None
    for path, ref in (
        ("model.apiKeySecretRef", model_key),
        ("agent.tracing.headersSecretRef", headers),
    ):
        if ref is not None:
            where = f"AgentDeployment {agent} spec.{path}"
            found.append(SecretUse(where, ref, "AgentDeployment", AGENT_DEPLOYMENT_USES[path]))
    return found


def secrets_read(node: Any) -> set[str]:
    """Names of every Secret a manifest's pods read (env, envFrom, volumes, projections)."""
    found: set[str] = set()
    if isinstance(node, dict):
        for key in ("secretKeyRef", "secretRef"):
            ref = node.get(key)
            if isinstance(ref, dict) and isinstance(ref.get("name"), str):
                found.add(ref["name"])
        volume = node.get("secret")
        if isinstance(volume, dict):
            name = volume.get("secretName") or volume.get("name")
            if isinstance(name, str):
                found.add(name)
        for value in node.values():
            found |= secrets_read(value)
    elif isinstance(node, list):
        for item in node:
            found |= secrets_read(item)
    return found


def unchecked_secrets(manifests: list[dict[str, Any]], checked: set[str]) -> Refused | None:
    """A refusal when a rendered manifest reads a Secret that no check allowed (Secrets the
    operator renders itself, in the same list, are its own)."""
    own = {m["metadata"]["name"] for m in manifests if m.get("kind") == "Secret"}
    for manifest in manifests:
        stray = sorted(secrets_read(manifest) - checked - own)
        if stray:
            return Refused(
                SECRET_NOT_ALLOWED,
                f"{manifest['kind']} {manifest['metadata']['name']} would read Secret "
                f"{stray[0]}, which no checked field names; nothing is applied (report this)",
            )
    return None


__all__ = [
    "ENDPOINT_NOT_ALLOWED",
    "IMAGE_NOT_ALLOWED",
    "SECRET_NOT_ALLOWED",
    "SECRET_NOT_FOUND",
    "SECRET_UNVERIFIABLE",
    "Refused",
    "SecretVerdict",
    "agent_uses",
    "allowlists",
    "check_secret_uses",
    "secrets_read",
    "spec_refusal",
    "unchecked_secrets",
]
