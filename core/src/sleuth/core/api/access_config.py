"""Who may ask the agent, and what each caller sees: ``access`` in the agent's configuration file.

The operator renders it from ``spec.agent.access`` of the AgentDeployment
(:mod:`sleuth.core.api.v1alpha1.access`); the agent enforces it (:mod:`sleuth.agent.access`).
Default deny: a request is served only for a caller one of ``callers`` names. A file without
``access`` is a laptop's: ``sleuth agent`` then listens on loopback only and serves every local
client as the caller ``local``.

Example::

    access:
      issuers:                                   # JWT issuers whose tokens are accepted
        - issuer: https://kubernetes.default.svc.cluster.local
          jwksUrl: https://kubernetes.default.svc/openid/v1/jwks
          caFile: /var/run/secrets/sleuth/kube-api/ca.crt
          tokenFile: /var/run/secrets/sleuth/kube-api/token   # sent to read the JWKS
          audiences: [sleuth.dev/agent/team-a/contracts]
          serviceAccounts: true                  # its tokens name Kubernetes ServiceAccounts
      callers:
        - name: contracts-eval                   # the EvalSchedule's Job
          serviceAccount: {namespace: team-a, name: contracts-eval}
          grants: [trace, evaluation]
        - name: dashboard
          apiKeyDirectory: /var/run/secrets/sleuth/keys/dashboard   # every file: one key
        - name: gateway
          token:
            issuer: https://idp.example.com
            subject: gateway
            claims: [{name: team, value: a}]
      audit: {question: digest}

Grants: ``trace`` — the answer carries the trace (tool calls with their raw output); ``evaluation``
— the eval header (``X-Sleuth-Eval``) is honoured (the request is kept out of online sampling);
``approve`` — the caller decides the tool calls its own runs wait to have approved
(``tools[].approval``; :mod:`sleuth.agent.approval`). A caller without it gets such calls refused
at once. The local caller (no ``access``) holds every grant.
"""

from __future__ import annotations

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from sleuth.core.api.fields import CALLER_NAME, CallerName, Grant, Grants, QuestionAudit

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
MAX_CALLERS = 64
MAX_ISSUERS = 8
MAX_CLAIMS = 8
MIN_API_KEY_CHARS = 16
"""Shorter files in a key directory are ignored (and logged): a guessable key admits no one."""


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class IssuerConfig(_Model):
    """A JWT issuer: its tokens are checked against its JWKS (signature, iss, aud, exp)."""

    issuer: str = Field(min_length=1, max_length=2048, description="The tokens' `iss`.")
    jwks_url: AnyHttpUrl = Field(description="Where the issuer's signing keys (JWKS) are read.")
    audiences: list[str] = Field(
        min_length=1,
        max_length=8,
        description="Accepted `aud` values; a token naming none of them is refused.",
    )
    ca_file: str | None = Field(
        default=None, description="PEM bundle that verifies the JWKS server (https)."
    )
    token_file: str | None = Field(
        default=None,
        description="File holding a bearer token sent when reading the JWKS (the cluster's "
        "issuer asks for one); read at each refresh, so a rotated token is picked up.",
    )
    service_accounts: bool = Field(
        default=False,
        description="Its tokens are Kubernetes ServiceAccount tokens (`sub` = "
        "`system:serviceaccount:<namespace>:<name>`): callers may name a serviceAccount.",
    )
    refresh_seconds: int = Field(
        default=300, ge=10, le=86400, description="How often the JWKS is read again."
    )
    leeway_seconds: int = Field(
        default=30, ge=0, le=300, description="Clock skew allowed on `exp` and `nbf`."
    )


class ServiceAccountRef(_Model):
    """A Kubernetes ServiceAccount, authenticated by its projected token."""

    namespace: str = Field(
        min_length=1, max_length=63, pattern=DNS_LABEL, description="Its namespace."
    )
    name: str = Field(min_length=1, max_length=253, pattern=DNS_LABEL, description="Its name.")

    @property
    def subject(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"


class ClaimMatch(_Model):
    """A claim the token must carry: equal to ``value``, or a list that contains it."""

    name: str = Field(min_length=1, max_length=253, description="The claim's name.")
    value: str = Field(max_length=1024, description="The value it must have (or contain).")


class TokenMatch(_Model):
    """Tokens of one issuer, narrowed by subject and claims (all must hold)."""

    issuer: str = Field(min_length=1, max_length=2048, description="One of `issuers`.")
    subject: str | None = Field(
        default=None, min_length=1, max_length=1024, description="The token's `sub`, if set."
    )
    claims: list[ClaimMatch] = Field(
        default_factory=list, max_length=MAX_CLAIMS, description="Claims the token must carry."
    )


class CallerConfig(_Model):
    """One caller the agent admits, how it proves who it is, and what it may see."""

    name: CallerName = Field(description="The caller's name in audit records and metrics.")
    api_key_directory: str | None = Field(
        default=None,
        min_length=1,
        description="A directory (a mounted Secret) whose every file holds one valid API key; "
        "read again every access.keyReloadSeconds, so keys rotate without a restart.",
    )
    service_account: ServiceAccountRef | None = Field(
        default=None, description="A ServiceAccount whose projected token names this agent."
    )
    token: TokenMatch | None = Field(default=None, description="JWTs of an issuer.")
    grants: Grants = Field(
        default_factory=list,
        description="`trace`: the trace (raw tool output) in answers; `evaluation`: the eval "
        "header is honoured; `approve`: it decides the tool calls its own runs wait to have "
        "approved (tools[].approval).",
    )

    @model_validator(mode="after")
    def _one_proof(self) -> CallerConfig:
        given = [
            f
            for f, v in (
                ("apiKeyDirectory", self.api_key_directory),
                ("serviceAccount", self.service_account),
                ("token", self.token),
            )
            if v is not None
        ]
        if len(given) != 1:
            raise ValueError(
                f"access.callers[{self.name}]: set exactly one of apiKeyDirectory, "
                f"serviceAccount and token (got {', '.join(given) or 'none'})"
            )
        if len(set(self.grants)) != len(self.grants):
            raise ValueError(f"access.callers[{self.name}].grants: a grant is listed twice")
        return self


class AuditConfig(_Model):
    """The audit record: one JSON line per request on the agent's standard output."""

    question: QuestionAudit = Field(
        default="full",
        description="`full`: the question's text; `digest`: only its SHA-256.",
    )


class AccessConfig(_Model):
    """Who may call the agent (default deny) and what each caller may see."""

    issuers: list[IssuerConfig] = Field(
        default_factory=list, max_length=MAX_ISSUERS, description="Accepted JWT issuers."
    )
    callers: list[CallerConfig] = Field(
        default_factory=list, max_length=MAX_CALLERS, description="The admitted callers."
    )
    audit: AuditConfig = Field(default_factory=AuditConfig, description="The audit record.")
    key_reload_seconds: int = Field(
        default=5, ge=1, le=3600, description="How often API key directories are read again."
    )

    @model_validator(mode="after")
    def _consistent(self) -> AccessConfig:
        names = [c.name for c in self.callers]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"access.callers: caller {name!r} is listed twice")
        issuers = {i.issuer: i for i in self.issuers}
        if len(issuers) != len(self.issuers):
            raise ValueError("access.issuers: an issuer is listed twice")
        for caller in self.callers:
            if caller.token is not None and caller.token.issuer not in issuers:
                raise ValueError(
                    f"access.callers[{caller.name}].token.issuer: {caller.token.issuer!r} is not "
                    "one of access.issuers"
                )
            if caller.service_account is not None and not any(
                i.service_accounts for i in self.issuers
            ):
                raise ValueError(
                    f"access.callers[{caller.name}].serviceAccount: no issuer of "
                    "access.issuers has serviceAccounts: true"
                )
        return self


__all__ = [
    "CALLER_NAME",
    "MIN_API_KEY_CHARS",
    "AccessConfig",
    "AuditConfig",
    "CallerConfig",
    "CallerName",
    "ClaimMatch",
    "Grant",
    "IssuerConfig",
    "QuestionAudit",
    "ServiceAccountRef",
    "TokenMatch",
]
