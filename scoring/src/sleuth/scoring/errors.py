"""The judge's error type (kept apart so the clients and the metrics share it)."""

from __future__ import annotations

from sleuth.core.errors import SleuthError


class JudgeError(SleuthError):
    """A judge or embeddings call failed for good; ``reason`` is a short stable category
    (timeout, connection, http_<status>, unparsable, truncated, no_verdicts, bad_response)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
