"""``spec.agent.access`` of an AgentDeployment: who may ask the agent, and what each caller sees.

Default deny. The agent admits the Jobs of its own EvalSchedules (their ServiceAccounts, with
the trace and the eval header: the scheduled eval needs the contexts) unless
``admitEvalSchedules`` is false, and the callers listed here — nothing else. A caller proves who
it is with one of:

- ``apiKeySecretRef``: an API key, one of the values of a Secret (every key of the Secret is a
  valid API key: add the new key, move the clients, remove the old one — no restart);
- ``serviceAccount``: a Kubernetes ServiceAccount's projected token whose audience is the agent
  (``status.agentAudience``), checked against the cluster's ServiceAccount issuer;
- ``token``: a JWT of one of ``issuers``, narrowed by subject and claims.

The agent's configuration file gets the same rules (:mod:`sleuth.core.api.access_config`); the
operator mounts the key Secrets and the cluster's JWKS access into the agent's pods.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.access_config import MAX_CALLERS, MAX_CLAIMS, MAX_ISSUERS
from sleuth.core.api.fields import CallerName, Grants, QuestionAudit
from sleuth.core.api.v1alpha1.common import (
    DNS_NAME,
    HTTPS_URL_PATTERN,
    LocalObjectRef,
    SpecModel,
)


class ServiceAccountSubject(SpecModel):
    """A ServiceAccount of the cluster."""

    name: str = Field(
        min_length=1, max_length=253, pattern=DNS_NAME, description="The ServiceAccount's name."
    )
    namespace: str | None = Field(
        default=None,
        min_length=1,
        max_length=63,
        pattern=DNS_NAME,
        description="Its namespace; default: the AgentDeployment's.",
    )


class ClaimRequirement(SpecModel):
    """A claim the token must carry: equal to value, or a list containing it."""

    name: str = Field(min_length=1, max_length=253, description="The claim's name, e.g. groups.")
    value: str = Field(max_length=1024, description="The value it must have (or contain).")


class TokenCaller(SpecModel):
    """JWTs of one of spec.agent.access.issuers, narrowed by subject and claims."""

    issuer: str = Field(
        min_length=1, max_length=2048, description="The issuer (an entry of issuers[].issuer)."
    )
    subject: str | None = Field(
        default=None, min_length=1, max_length=1024, description="The token's sub, when set."
    )
    claims: list[ClaimRequirement] | None = Field(
        default=None, max_length=MAX_CLAIMS, description="Claims the token must carry (all)."
    )


_ONE_PROOF = (
    "[has(self.apiKeySecretRef), has(self.serviceAccount), has(self.token)]"
    ".filter(x, x).size() == 1"
)


class AccessCaller(SpecModel):
    """One admitted caller: its name, how it proves who it is (exactly one way), what it sees."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": _ONE_PROOF,
                    "message": "spec.agent.access.callers[]: set exactly one of "
                    "apiKeySecretRef, serviceAccount and token",
                }
            ]
        }
    )

    name: CallerName = Field(
        description="The caller's name in audit records and metrics (label caller).",
    )
    api_key_secret_ref: LocalObjectRef | None = Field(
        default=None,
        description="A Secret in the AgentDeployment's namespace whose every value is a valid "
        "API key of this caller (at least 16 characters), sent as Authorization: Bearer <key>. "
        "Mounted into the agent's pods: keys added or removed take effect without a restart.",
    )
    service_account: ServiceAccountSubject | None = Field(
        default=None,
        description="A ServiceAccount whose projected token (audience: status.agentAudience) "
        "identifies the caller.",
    )
    token: TokenCaller | None = Field(default=None, description="JWTs of one of issuers.")
    grants: Grants | None = Field(
        default=None,
        description="What the caller may see or do besides asking: trace (the trace, with the "
        "tools' raw output), evaluation (its X-Sleuth-Eval header keeps its requests out of "
        "online sampling) and approve (it decides the tool calls its own runs wait to have "
        "approved, spec.approval of a ToolBinding; without it such a call is refused at once). "
        "Default: none.",
    )

    @model_validator(mode="after")
    def _one_proof(self) -> AccessCaller:
        given = [
            v for v in (self.api_key_secret_ref, self.service_account, self.token) if v is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "spec.agent.access.callers: set exactly one of apiKeySecretRef, serviceAccount "
                f"and token (caller {self.name})"
            )
        return self


class AccessIssuer(SpecModel):
    """An external JWT issuer (an identity provider): its tokens are checked against its JWKS."""

    issuer: str = Field(
        min_length=1,
        max_length=2048,
        pattern=r"^https://\S+$",
        description="The issuer's URL, the tokens' iss.",
    )
    jwks_url: str = Field(
        max_length=2048,
        pattern=HTTPS_URL_PATTERN,
        description="Where its signing keys (JWKS) are read (https): the agent's pods contact "
        "it, so like every endpoint it must be a Service of the cluster by its cluster name or "
        "a host the platform team allows (the operator's --allowed-hosts, the chart's "
        "admission.allowedHosts).",
    )
    audience: str | None = Field(
        default=None,
        min_length=1,
        max_length=1024,
        description="The aud its tokens must name; default: the agent's audience "
        "(status.agentAudience).",
    )


class AuditSpec(SpecModel):
    """The audit record the agent writes per request (JSON lines on its output)."""

    question: QuestionAudit = Field(
        default="full",
        description="full: the question's text in each record; digest: only its SHA-256.",
    )


class AccessSpec(SpecModel):
    """Who may call the agent (default deny) and what each caller may see."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.callers) || self.callers.all(c, !has(c.token) || "
                    "(has(self.issuers) && self.issuers.exists(i, i.issuer == c.token.issuer)))",
                    "message": "spec.agent.access.callers[].token.issuer must be one of "
                    "spec.agent.access.issuers[].issuer",
                },
            ]
        }
    )

    admit_eval_schedules: bool = Field(
        default=True,
        description="Admit the Jobs of this agent's EvalSchedules (their ServiceAccounts), with "
        "the trace and evaluation grants.",
    )
    callers: list[AccessCaller] | None = Field(
        default=None,
        max_length=MAX_CALLERS,
        description="The callers admitted besides the eval Jobs, keyed by name.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    issuers: list[AccessIssuer] | None = Field(
        default=None,
        max_length=MAX_ISSUERS - 1,  # the cluster's own issuer is always there
        description="External JWT issuers, keyed by issuer (the cluster's ServiceAccount issuer "
        "is always accepted).",
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["issuer"],
        },
    )
    audit: AuditSpec = Field(
        default_factory=AuditSpec,
        description="The audit record.",
        json_schema_extra={"default": {}},
    )

    @model_validator(mode="after")
    def _known_issuers(self) -> AccessSpec:
        names = [c.name for c in self.callers or []]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"spec.agent.access.callers: caller {name} is listed twice")
        known = {i.issuer for i in self.issuers or []}
        for caller in self.callers or []:
            if caller.token is not None and caller.token.issuer not in known:
                raise ValueError(
                    f"spec.agent.access.callers: caller {caller.name}: token.issuer "
                    f"{caller.token.issuer} is not one of spec.agent.access.issuers"
                )
        return self


__all__ = [
    "AccessCaller",
    "AccessIssuer",
    "AccessSpec",
    "AuditSpec",
    "ClaimRequirement",
    "ServiceAccountSubject",
    "TokenCaller",
]
