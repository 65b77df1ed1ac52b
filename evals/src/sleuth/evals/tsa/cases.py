"""The TSA dataset: one JSONL line per case.

Schema (see docs/evals.md)::

    {"id": "seed-orders-march",
     "query": "How many orders in March?",
     "expected": [{"name": "sql_query",
                   "arguments": {"query": [{"$contains": ["count", "orders"]}],
                                 "params": ["", {"$any": true}]}}],
     "split": "dev", "stratum": "single", "source": "seed", "note": "..."}

``expected`` lists the calls the model should make in its first decision step (several = parallel
calls, matched in any order); an empty list means *no tool* (an irrelevance case). Each argument
maps to a list of acceptable values, as in the Berkeley Function Calling Leaderboard: a literal
JSON value (compared after normalisation), ``""`` meaning the argument may be left out, or a
matcher object — ``{"$any": true}``, ``{"$contains": [...]}`` (every substring, case-folded),
``{"$regex": "..."}`` (Python ``re.search``, case-insensitive, dot matches newlines).

``stratum`` (:data:`Stratum`) says what kind of decision the case tests, and results are reported
per stratum: ``single`` (one tool), ``sequential`` (two tools where the second needs the first's
result, so the first step is the first tool alone), ``parallel`` (independent calls in one
step), ``none`` (no tool), ``adversarial`` (false premises, injection attempts: the expected
calls are the safe ones). Omitted, it is derived from ``expected``: none, single or parallel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sleuth.core.jsonl import load_jsonl

NONE_LABEL = "none"
Stratum = Literal["single", "sequential", "parallel", "none", "adversarial"]
STRATA: tuple[Stratum, ...] = ("single", "sequential", "parallel", "none", "adversarial")
# How many expected calls each stratum allows (adversarial: any).
_STRATUM_CALLS: dict[str, tuple[int, int]] = {
    "single": (1, 1),
    "sequential": (1, 1),
    "parallel": (2, 64),
    "none": (0, 0),
}
MATCHER_KEYS = frozenset({"$any", "$contains", "$regex"})


class ExpectedCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    arguments: dict[str, list[Any]] = Field(default_factory=dict)

    @field_validator("arguments")
    @classmethod
    def _acceptable_lists(cls, value: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for arg, acceptable in value.items():
            if not acceptable:
                raise ValueError(f"argument {arg!r}: the list of acceptable values is empty")
            for item in acceptable:
                if isinstance(item, dict) and any(k.startswith("$") for k in item):
                    unknown = set(item) - MATCHER_KEYS
                    if unknown or len(item) != 1:
                        raise ValueError(
                            f"argument {arg!r}: a matcher has exactly one of "
                            f"{sorted(MATCHER_KEYS)}, got {sorted(item)}"
                        )
        return value


class TsaCase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    query: str = Field(min_length=1)
    expected: list[ExpectedCall]
    split: Literal["dev", "test"]
    stratum: Stratum | None = None
    source: str = "own"
    note: str = ""

    @model_validator(mode="after")
    def _stratum(self) -> TsaCase:
        n = len(self.expected)
        if self.stratum is None:
            self.stratum = "none" if n == 0 else "single" if n == 1 else "parallel"
        low, high = _STRATUM_CALLS.get(self.stratum, (0, 64))
        if not low <= n <= high:
            raise ValueError(
                f"stratum {self.stratum!r} expects {low}-{high} calls in 'expected', got {n}"
            )
        return self

    @property
    def stratum_label(self) -> str:
        return self.stratum or "single"

    @property
    def expected_label(self) -> str:
        return label_for([c.name for c in self.expected])


def label_for(names: list[str]) -> str:
    """The confusion-matrix label of a set of calls: ``none`` or the sorted names joined by +."""
    return "+".join(sorted(names)) if names else NONE_LABEL


def load_cases(path: Path | str, split: str | None = None) -> list[TsaCase]:
    """Load and validate a TSA JSONL file, optionally keeping one split."""
    cases = load_jsonl(path, TsaCase)
    return [c for c in cases if split in (None, "all") or c.split == split]


def shipped_cases_path() -> Path:
    """The TSA set that ships with sleuth (evals/data/tsa_cases.jsonl)."""
    return Path(__file__).resolve().parent.parent / "data" / "tsa_cases.jsonl"
