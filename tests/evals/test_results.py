"""Result documents: thresholds and directions, the gate, shard merging for RAGAS."""

from __future__ import annotations

from typing import Any

import pytest

from sleuth.evals.errors import EvalError
from sleuth.evals.rag.runner import Failure, RagRun
from sleuth.evals.report.merge import merge
from sleuth.evals.report.results import DEFAULT_THRESHOLDS, RunLabels, ragas_document

pytestmark = pytest.mark.unit

NAMES = ["faithfulness", "noise_sensitivity"]


def row(rid: str, stratum: str, **scores: float) -> dict[str, Any]:
    return {"id": rid, "stratum": stratum, "split": "dev", "scores": scores, "details": {}}


def run(rows: list[dict[str, Any]], failures: list[Failure] | None = None) -> RagRun:
    return RagRun(
        rows=rows,
        failures=failures or [],
        metrics=NAMES,
        usage={"total_tokens": 10 * len(rows)},
        judge={},
        duration_s=1.0,
        value_names=NAMES,
    )


def doc(r: RagRun, shard: str = "", max_failures: int = 0) -> dict[str, Any]:
    return ragas_document(
        r, RunLabels("a", "d", "dev", "sha", shard), DEFAULT_THRESHOLDS, max_failures
    )


ROWS = [
    row("r1", "easy", faithfulness=1.0, noise_sensitivity=0.0),
    row("r2", "easy", faithfulness=1.0, noise_sensitivity=0.5),
    row("r3", "adversarial", faithfulness=0.7),
]
FAIL = Failure("r3", "noise_sensitivity", "unparsable", "twice")


def test_means_skip_failed_rows_and_directions_apply() -> None:
    d = doc(run(ROWS, [FAIL]), max_failures=1)
    f, n = d["metrics"]["faithfulness"], d["metrics"]["noise_sensitivity"]
    assert f["value"] == pytest.approx(0.9)
    assert f["passed"] is True
    assert (n["value"], n["rows"], n["failed_rows"]) == (0.25, 2, 1)  # not averaged as 0
    assert n["direction"] == "max"
    assert n["passed"] is False  # 0.25 > 0.15
    assert d["gate"]["reasons"] == ["noise_sensitivity 0.2500 does not satisfy <= 0.15"]
    assert d["per_stratum"]["adversarial"] == {"faithfulness": 0.7, "noise_sensitivity": None}


def test_failed_rows_beyond_the_allowance_fail_the_gate() -> None:
    clean = [row(f"r{i}", "easy", faithfulness=0.9, noise_sensitivity=0.0) for i in (1, 2, 3)]
    d = doc(run(clean, [FAIL]))
    assert d["gate"]["reasons"] == ["1 failed rows/cases > allowed 0"]


def test_an_empty_shard_gates_nothing_but_an_empty_run_fails() -> None:
    assert doc(run([]), shard="3/4")["gate"]["passed"] is True
    assert doc(run([]))["gate"]["passed"] is False


def test_ragas_shards_merge_exactly() -> None:
    whole = doc(run(ROWS, [FAIL]))
    merged = merge([doc(run(ROWS[:1]), "0/2"), doc(run(ROWS[1:], [FAIL]), "1/2")])
    assert merged["metrics"] == whole["metrics"]
    assert merged["per_stratum"] == whole["per_stratum"]
    assert merged["failures"] == whole["failures"]
    assert merged["usage"] == {"total_tokens": 30}
    with pytest.raises(EvalError, match="more than one shard"):
        merge([doc(run(ROWS[:2]), "0/2"), doc(run(ROWS[1:]), "1/2")])
    other = ragas_document(run(ROWS), RunLabels("a", "d", "test", "sha"), DEFAULT_THRESHOLDS)
    with pytest.raises(EvalError, match="different split"):
        merge([doc(run(ROWS[:1])), other])
