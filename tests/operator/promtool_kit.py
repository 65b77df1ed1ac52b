"""What the promtool tests of the EvalSchedule rules share: the rendered schedule, its specs,
and running ``promtool check rules`` + ``promtool test rules`` on rendered rules."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.operator.render import Owner
from sleuth.operator.render.evalrules import SCORE_ALERTS

PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
NEEDS_PROMTOOL = pytest.mark.skipif(not Path(PROMTOOL).exists(), reason="promtool is not installed")

OWNER = Owner(kind="EvalSchedule", name="nightly", namespace="team-a", uid="uid")
BASE: dict[str, Any] = {
    "agentRef": {"name": "contracts"},
    "schedule": "0 3 * * *",
    "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    "metrics": [a.metric for a in SCORE_ALERTS],
    # every alert's metric, TSA included: it is scored on the team's own cases
    "toolSelection": {"configMapRef": {"name": "team-tsa", "key": "tsa.jsonl"}},
}
SPECS: dict[str, dict[str, Any]] = {
    "seed-defaults": {},
    "short-windows": {
        "alerts": {"window": "10m", "for": "4m", "severity": "critical"},
        "thresholds": {
            "faithfulness": 0.9,
            "answerRelevancy": 0.5,
            "contextPrecision": 0.4,
            "contextRecall": 0.8,
            "toolSelectionAccuracy": 0.95,
        },
    },
}


def rule_of(rendered: dict[str, Any], alert: str, source: str | None = None) -> dict[str, Any]:
    rules = rendered["spec"]["groups"][0]["rules"]
    found: dict[str, Any] = next(
        r for r in rules if r["alert"] == alert and r["labels"].get("source") == source
    )
    return found


def run_promtool(tmp_path: Path, rendered: dict[str, Any], cases: list[Any]) -> None:
    """``promtool check rules`` and ``promtool test rules`` pass on the rendered rules."""
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump(rendered["spec"]), encoding="utf-8")
    tests_file = tmp_path / "tests.yaml"
    tests_file.write_text(
        yaml.safe_dump(
            {"rule_files": [rules_file.name], "evaluation_interval": "1m", "tests": cases}
        ),
        encoding="utf-8",
    )
    check = subprocess.run(
        [PROMTOOL, "check", "rules", str(rules_file)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stdout + check.stderr
    run = subprocess.run(
        [PROMTOOL, "test", "rules", tests_file.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
