"""One folder per scheduled run, the newest few kept (an EvalSchedule's ``spec.reports``).

A run's parts write ``<root>/<run>/<part>.json`` and ``.html`` (``--out``/``--html``); with
``--keep-runs N`` each part then removes the oldest run folders beside its own beyond N (by
modification time; its own folder is never removed). Two parts of one run may prune at once: a
folder the other already removed is not an error.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path


def ensure_parents(paths: Iterable[Path | None]) -> None:
    """Create the folders the outputs go to (a run's folder does not exist before it)."""
    for path in paths:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)


def prune_runs(run_dir: Path, keep: int) -> list[Path]:
    """Remove the oldest folders beside ``run_dir`` so that ``keep`` remain (``run_dir``
    included); returns those removed."""
    if keep < 1:
        raise ValueError(f"--keep-runs {keep}: keep at least 1 run")
    root = run_dir.parent

    def age(folder: Path) -> tuple[float, str]:
        try:
            return (folder.stat().st_mtime, folder.name)
        except FileNotFoundError:  # removed by the run's other part meanwhile
            return (0.0, folder.name)

    others = sorted(
        (p for p in root.iterdir() if p.is_dir() and p != run_dir), key=age, reverse=True
    )
    removed = others[keep - 1 :]
    for folder in removed:
        shutil.rmtree(folder, ignore_errors=True)
    return removed


__all__ = ["ensure_parents", "prune_runs"]
