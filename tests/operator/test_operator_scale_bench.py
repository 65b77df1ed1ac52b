"""bench/operator_scale.py at a tiny N, so that the benchmark cannot rot.

It starts its own control plane (up.sh with the wide Service range and the audit policy), runs
every phase with short windows and prints the table. The audit log must have seen exactly one
write per child the bare client applied: that is what makes its write counts trustworthy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _binaries_or_skip() -> None:
    build = subprocess.run(
        [str(ROOT / "tests" / "cluster" / "build.sh")], capture_output=True, text=True
    )
    if build.returncode != 0:
        reason = f"tests/cluster/build.sh failed:\n{build.stderr[-3000:]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)


def test_the_scale_benchmark_runs_at_two_agents(tmp_path: Path) -> None:
    _binaries_or_skip()
    out = tmp_path / "result.json"
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "operator_scale.py"),
            "--agents=2",
            "--h100=2",
            "--cpu=1",
            "--settle-seconds=2",
            "--quiet-seconds=10",
            "--restart-seconds=15",
            "--operator-arg=--resync-seconds=8",
            "--resync-period=8",
            "--resync-pass-timeout=60",
            "--ready-timeout=240",
            "--budget-seconds=600",
            f"--out={out}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    assert "| **ratio operator / bare** (target ≤ 1.25) |" in run.stdout
    assert "| converged: writes/min over " in run.stdout
    result = json.loads(out.read_text())
    bare, operator = result["bare"], result["operator"]
    assert bare["failed_applies"] == 0
    assert operator["failed_applies"] == 0
    # 2 agents: model Deployment + Service, agent Deployment + Service + ConfigMap (+ what the
    # renderers add), three tools of four children each: every apply reached the audit log.
    assert bare["children"] >= 2 * (5 + 3 * 4)
    assert bare["writes"]["writes"] == bare["children"], bare["writes"]
    assert bare["ready_s"] > 0
    assert operator["ready_s"] > 0
    assert operator["writes"]["writes"] >= bare["children"]  # it applied them too
    assert operator["peak_rss_mib"] > 0
    assert operator["cpu_s"] > 0
    assert result["quiet"]["seconds"] >= 10
    # a resync pass: every object reconciled once, nothing written
    assert result["resync"]["objects"] == 2 * 4
    assert result["resync"]["writes"] == 0
    assert "| one resync pass (8 objects): CPU / wall / writes |" in run.stdout
    assert result["restart"]["ready_after"] == 2 * 4
    assert result["exit_after_sigterm_s"] is not None
    assert result["exit_after_second_sigterm_s"] is not None
