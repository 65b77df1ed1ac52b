"""RAG evaluation rows: what was asked, answered and retrieved, plus the golden reference.

One JSONL line per row (see docs/evals.md)::

    {"id": "redis-latency", "question": "...", "answer": "...",
     "contexts": ["C1 text", "C2 text"], "context_ids": ["C1", "C2"],
     "reference": "...", "reference_context_ids": ["C1", "C4"],
     "stratum": "easy", "split": "dev", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}

``answer`` and ``contexts`` come from the agent (a recorded trace, see
:mod:`sleuth.evals.traces`); ``reference``, ``reference_context_ids``, ``stratum`` and ``split``
from the golden dataset; ``trace_id`` (optional) is the OpenTelemetry trace of the agent's
request, which the eval result's row carries as ``traceId``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sleuth.core.jsonl import load_jsonl

Stratum = Literal["easy", "multi-hop", "adversarial"]


class RagSample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    contexts: list[str] = Field(
        default_factory=list,
        description="Retrieved texts; empty when the agent answered without retrieving.",
    )
    context_ids: list[str] = Field(default_factory=list)
    reference: str | None = None
    reference_context_ids: list[str] = Field(default_factory=list)
    stratum: Stratum = "easy"
    split: Literal["dev", "test"] = "dev"
    trace_id: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{32}$",
        description="The agent request's trace id (32 lowercase hex), when it was traced.",
    )

    @model_validator(mode="after")
    def _ids_align(self) -> RagSample:
        if self.context_ids and len(self.context_ids) != len(self.contexts):
            raise ValueError(
                f"context_ids has {len(self.context_ids)} entries but contexts has "
                f"{len(self.contexts)}"
            )
        return self


def load_samples(path: Path | str, split: str | None = None) -> list[RagSample]:
    rows = load_jsonl(path, RagSample)
    return [r for r in rows if split in (None, "all") or r.split == split]
