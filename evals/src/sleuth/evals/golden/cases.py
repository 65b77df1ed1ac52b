"""Golden RAG cases: question, reference answer, reference context ids, stratum, split.

One JSONL line per case (see docs/evals.md)::

    {"id": "g-3f2a9c1e", "question": "...", "reference": "...",
     "reference_context_ids": ["handbook.md#4"], "stratum": "easy", "split": "dev",
     "origin": "generated", "review": "accepted"}

``reference_context_ids`` name chunks (``document#index``) or whole documents (an id without
``#``). ``reference_evidence`` (optional) names the evidence as text inside a document: a
retrieved passage is relevant when it comes from that document and contains that text, whatever
the chunking — what a comparison of chunk sizes needs (:mod:`sleuth.scoring.retrieval`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sleuth.core.jsonl import load_jsonl
from sleuth.scoring.samples import Stratum

NOT_ENOUGH_INFORMATION = "I do not have enough information."


class Evidence(BaseModel):
    """A piece of evidence: text (whitespace-insensitive) inside one document."""

    model_config = ConfigDict(extra="forbid")

    document_id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class GoldenCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    question: str = Field(min_length=1)
    reference: str = Field(min_length=1)
    reference_context_ids: list[str] = Field(default_factory=list)
    reference_evidence: list[Evidence] = Field(default_factory=list)
    stratum: Stratum
    split: Literal["dev", "test"]
    origin: str = "generated"
    review: Literal["pending", "accepted", "rejected"] = "pending"


def load_golden(path: Path | str, split: str | None = None) -> list[GoldenCase]:
    cases = load_jsonl(path, GoldenCase)
    return [c for c in cases if split in (None, "all") or c.split == split]


def shipped_golden_path() -> Path:
    """A small hand-written golden set over the sample contracts corpus
    (:mod:`sleuth.tools.sample`),
    frozen with its manifest (evals/data/golden_contracts.jsonl)."""
    return Path(__file__).resolve().parent.parent / "data" / "golden_contracts.jsonl"
