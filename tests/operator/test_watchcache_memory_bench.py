"""bench/watchcache_memory.py at two agents, so that the benchmark cannot rot."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

pytestmark = pytest.mark.unit


def test_the_watch_cache_memory_benchmark_runs_at_two_agents() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "watchcache_memory.py"), "--agents", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"34 children seen: \d+\.\d\d MiB", lines[0]), lines
    assert re.fullmatch(r"6 ToolBindings kept: \d+\.\d\d MiB", lines[1]), lines
    held = float(lines[2].split(": ")[1].split()[0])
    assert 0.0 <= held < 5.0, lines
