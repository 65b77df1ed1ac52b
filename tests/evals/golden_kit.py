"""The golden questions the evals' end-to-end tests ask the agent: the worked example, and a
false premise the right answer to which is that there is not enough information."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION, GoldenCase
from sleuth.evals.golden.manifest import freeze
from sleuth.scoring.samples import RagSample

ADVERSARIAL = "Why did Redis remove in-memory storage in version 7?"


def seed_cases(example: RagSample, split: Literal["dev", "test"]) -> list[GoldenCase]:
    """``redis`` (the worked example, easy) and ``false-premise`` (adversarial), in ``split``."""
    return [
        GoldenCase(
            id="redis",
            question=example.question,
            reference=example.reference or "",
            stratum="easy",
            split=split,
        ),
        GoldenCase(
            id="false-premise",
            question=ADVERSARIAL,
            reference=NOT_ENOUGH_INFORMATION,
            stratum="adversarial",
            split=split,
        ),
    ]


def frozen_golden(cases: list[GoldenCase], folder: Path) -> Path:
    """``folder/golden.jsonl`` holding the cases, with its frozen manifest beside it."""
    golden = folder / "golden.jsonl"
    dump_jsonl(cases, golden)
    freeze(cases, golden)
    return golden
