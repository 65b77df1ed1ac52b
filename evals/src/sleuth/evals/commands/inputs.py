"""What every scoring run does with what it reads: the split guard, its shard, its labels."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from sleuth.evals.commands.options import RunOptions
from sleuth.evals.errors import EvalError
from sleuth.evals.golden.manifest import guard_split
from sleuth.evals.report.results import RunLabels, file_sha256
from sleuth.evals.splits import in_shard, parse_shard

T = TypeVar("T")


def check_split(run: RunOptions) -> None:
    """Refuse the frozen test split unless the run is a final report (the Goodhart rule)."""
    guard_split(run.split, run.final_report)


def this_shard(
    items: Sequence[T], key: Callable[[T], str], run: RunOptions, source: Path, noun: str
) -> list[T]:
    """The ``items`` of ``--shard`` (all without it). A split without items is an error; a
    shard that drew none is not (another shard has them)."""
    shard = parse_shard(run.shard) if run.shard else None
    kept = [i for i in items if shard is None or in_shard(key(i), *shard)]
    if not kept and shard is None:
        raise EvalError(f"{source}: no {noun} in split {run.split!r}")
    return kept


def labels(run: RunOptions, source: Path) -> RunLabels:
    """The labels of a run's scores: ``--dataset`` (else the file's stem), the split, the
    file's checksum and the shard."""
    return RunLabels(
        run.agent,
        run.dataset or source.stem,
        run.split,
        dataset_sha256=file_sha256(source),
        shard=run.shard or "",
    )
