"""One folder per scheduled run on the reports claim, the newest kept (--keep-runs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.evals.report.runfolders import ensure_parents, prune_runs

pytestmark = pytest.mark.unit


def _runs(root: Path, names: list[str]) -> None:
    for age, name in enumerate(names):  # the first name is the newest
        folder = root / name
        (folder / "ragas.json").parent.mkdir(parents=True)
        (folder / "ragas.json").write_text("{}")
        stamp = 1_000_000 - age * 60
        os.utime(folder, (stamp, stamp))


def test_the_newest_runs_are_kept_and_this_one_always(tmp_path: Path) -> None:
    _runs(tmp_path, ["job-5", "job-4", "job-3", "job-2", "job-1"])
    current = tmp_path / "job-1"  # the oldest by mtime, but the run writing now
    removed = prune_runs(current, 3)
    assert sorted(p.name for p in removed) == ["job-2", "job-3"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job-1", "job-4", "job-5"]


def test_keep_must_be_at_least_one(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keep at least 1"):
        prune_runs(tmp_path / "job", 0)


def test_the_run_folder_is_made_before_the_reports(tmp_path: Path) -> None:
    out = tmp_path / "schedule" / "job-9" / "tsa.json"
    ensure_parents([out, None])
    assert out.parent.is_dir()
