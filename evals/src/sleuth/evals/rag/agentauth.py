"""How the eval proves who it is to the agent: a bearer credential on every question.

In a cluster the EvalSchedule's Job has a projected ServiceAccount token whose audience is the
agent (``--agent-token-file``; the kubelet rotates the file, so it is read for each question).
Outside one, an API key (``--agent-api-key``, default ``$SLEUTH_AGENT_API_KEY``; the agent's
``access`` names its Secret).
The credential goes only into the ``Authorization`` header: never into a log, a record or an
error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sleuth.evals.errors import EvalError

API_KEY_ENV = "SLEUTH_AGENT_API_KEY"


@dataclass(frozen=True)
class AgentCredential:
    token_file: Path | None = None
    api_key: str | None = None

    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header (empty without a credential)."""
        if self.token_file is not None:
            try:
                token = self.token_file.read_text(encoding="utf-8").strip()
            except OSError as err:
                raise EvalError(
                    f"--agent-token-file {self.token_file}: cannot read it "
                    f"({err.strerror or type(err).__name__})"
                ) from None
            if not token:
                raise EvalError(f"--agent-token-file {self.token_file}: the file is empty")
            return {"Authorization": f"Bearer {token}"}
        if self.api_key:
            return {"Authorization": f"Bearer {self.api_key}"}
        return {}

    def __repr__(self) -> str:  # never the key
        key = "***" if self.api_key else None
        return f"AgentCredential(token_file={self.token_file!s}, api_key={key})"


__all__ = ["API_KEY_ENV", "AgentCredential"]
