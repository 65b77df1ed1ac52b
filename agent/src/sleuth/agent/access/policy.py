"""Which configured caller a proven identity is: ``access.callers`` as lookup tables.

An API key belongs to the caller whose directory held it. A token is matched, in the order the
callers are listed, against ``serviceAccount`` (its issuer has ``serviceAccounts: true`` and its
``sub`` is ``system:serviceaccount:<namespace>:<name>``) or ``token`` (the issuer, the subject if
given, and every listed claim: equal, or a list containing the value). The first match wins; no
match is no caller (default deny).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sleuth.agent.access.caller import Caller
from sleuth.agent.access.keys import KeyMatch
from sleuth.agent.access.tokens import TokenIdentity
from sleuth.core.api.access_config import CallerConfig, ClaimMatch


def _claim_holds(claims: Mapping[str, Any], match: ClaimMatch) -> bool:
    value = claims.get(match.name)
    if isinstance(value, list):
        return match.value in [str(v) for v in value if isinstance(v, str | int | bool)]
    if isinstance(value, bool):
        return match.value == str(value).lower()
    return isinstance(value, str | int) and str(value) == match.value


class Policy:
    def __init__(self, callers: list[CallerConfig]) -> None:
        self.callers = {c.name: c for c in callers}

    def _caller(self, config: CallerConfig, subject: str, proof: str) -> Caller:
        return Caller(
            config.name,
            "api_key" if proof == "api_key" else "token",
            subject,
            trace="trace" in config.grants,
            evaluation="evaluation" in config.grants,
            approve="approve" in config.grants,
        )

    def by_key(self, key: KeyMatch) -> Caller | None:
        config = self.callers.get(key.caller)
        return self._caller(config, key.key_id, "api_key") if config is not None else None

    def by_token(self, identity: TokenIdentity) -> Caller | None:
        for config in self.callers.values():
            if self._admits(config, identity):
                return self._caller(config, identity.subject, "token")
        return None

    @staticmethod
    def _admits(config: CallerConfig, identity: TokenIdentity) -> bool:
        account = config.service_account
        if account is not None:
            return identity.service_accounts and identity.subject == account.subject
        match = config.token
        if match is None or match.issuer != identity.issuer:
            return False
        if match.subject is not None and match.subject != identity.subject:
            return False
        return all(_claim_holds(identity.claims, claim) for claim in match.claims)


__all__ = ["Policy"]
