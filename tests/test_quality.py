"""ruff and mypy (strict on the packages) are clean: the configured checks are part of the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

pytestmark = [pytest.mark.slow, pytest.mark.unit]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)


def test_ruff_check_is_clean() -> None:
    proc = _run(str(BIN / "ruff"), "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = _run(str(BIN / "mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_only_the_three_package_symlinks_exist() -> None:
    """sleuth/{agent,operator,evals} point at the top-level folders; a stray link loops mypy."""
    tracked = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    links = sorted(line.split("\t")[1] for line in tracked if line.startswith("120000"))
    assert links == ["sleuth/agent", "sleuth/evals", "sleuth/operator"]
    for name in ("agent", "operator", "evals"):
        assert (ROOT / "sleuth" / name).resolve() == ROOT / name
        assert not (ROOT / name / name).is_symlink(), f"stray symlink {name}/{name}"
