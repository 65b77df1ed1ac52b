"""The machine-readable result of a run, its thresholds and the CI gate.

One JSON document per run (``kind`` ``tsa``, ``ragas`` or ``retrieval``); the Prometheus
exposition and the HTML report are rendered from it, so every number in them can be traced to
this file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.core.errors import DatasetError
from sleuth.evals.rag.runner import RagRun, RetrievalRun
from sleuth.evals.tsa.runner import TsaRun
from sleuth.evals.tsa.scoring import summarise
from sleuth.scoring.metrics import LOWER_IS_BETTER
from sleuth.scoring.retrieval import LATENCY, QUALITY_METRICS, percentile

SCHEMA_VERSION = 1
RESULT_KINDS = frozenset({"tsa", "ragas", "retrieval"})

DEFAULT_THRESHOLDS: dict[str, float] = {
    # the seed article's operational thresholds
    "faithfulness": 0.80,
    "answer_relevancy": 0.70,
    "context_precision_simple": 0.60,
    "context_recall": 0.70,
    "noise_sensitivity": 0.15,  # lower is better: a maximum
    # the same levels for the judge-free forms (sleuth eval retrieval)
    "context_precision_id": 0.60,
    "context_recall_id": 0.70,
    "tool_selection_accuracy": 0.85,
}


@dataclass(frozen=True)
class RunLabels:
    agent: str
    dataset: str
    split: str
    dataset_sha256: str = ""
    shard: str = ""


def file_sha256(path: Path | str) -> str:
    """Checksum of the dataset file a run read, recorded in its result."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _head(kind: str, labels: RunLabels) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "kind": kind,
        "created": _now(),
        "agent": labels.agent,
        "dataset": labels.dataset,
        "split": labels.split,
        "dataset_sha256": labels.dataset_sha256,
        "shard": labels.shard,
    }


def parse_thresholds(items: Sequence[str]) -> dict[str, float]:
    """``name=value`` pairs from the command line, merged over the defaults."""
    out = dict(DEFAULT_THRESHOLDS)
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--threshold {item!r}: expected NAME=VALUE")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--threshold {item!r}: {value!r} is not a number") from None
    return out


def _metric_entry(
    name: str, value: float | None, rows: int, failed: int, thresholds: Mapping[str, float]
) -> dict[str, Any]:
    direction = "max" if name in LOWER_IS_BETTER else "min"
    threshold = thresholds.get(name)
    passed: bool | None = None
    if threshold is not None:
        if value is None:
            passed = False
        else:
            passed = value <= threshold if direction == "max" else value >= threshold
    return {
        "value": value,
        "threshold": threshold,
        "direction": direction,
        "passed": passed,
        "rows": rows,
        "failed_rows": failed,
    }


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def _gate(
    metrics: Mapping[str, Mapping[str, Any]],
    failures: int,
    max_failures: int,
    *,
    empty_shard: bool = False,
) -> dict[str, Any]:
    """Pass unless a threshold is missed or too many rows failed. A shard that drew no rows
    gates nothing (the merged result does)."""
    reasons = []
    for name, m in metrics.items():
        if m["passed"] is False and not (empty_shard and m["value"] is None):
            shown = "no value" if m["value"] is None else f"{m['value']:.4f}"
            op = "<=" if m["direction"] == "max" else ">="
            reasons.append(f"{name} {shown} does not satisfy {op} {m['threshold']}")
    if failures > max_failures:
        reasons.append(f"{failures} failed rows/cases > allowed {max_failures}")
    return {"passed": not reasons, "reasons": reasons, "max_failures": max_failures}


def tsa_document(
    run: TsaRun, labels: RunLabels, thresholds: Mapping[str, float], max_failures: int = 0
) -> dict[str, Any]:
    threshold = thresholds.get(
        "tool_selection_accuracy", DEFAULT_THRESHOLDS["tool_selection_accuracy"]
    )
    summary = summarise(run.results, threshold)
    metrics = {
        "tool_selection_accuracy": _metric_entry(
            "tool_selection_accuracy",
            summary.tsa,
            summary.cases - summary.errors,
            summary.errors,
            {"tool_selection_accuracy": threshold},
        )
    }
    for extra in ("argument_accuracy", "irrelevance_accuracy", "full_accuracy", "tsa_tool_turns"):
        metrics[extra] = _metric_entry(
            extra,
            getattr(summary, extra),
            summary.cases - summary.errors,
            summary.errors,
            thresholds,
        )
    return {
        **_head("tsa", labels),
        "metrics": metrics,
        "summary": summary.to_json(),
        "gate": _gate(
            {"tool_selection_accuracy": metrics["tool_selection_accuracy"]},
            summary.errors,
            max_failures,
            empty_shard=bool(labels.shard) and not run.results,
        ),
        "failures": [r.to_json() for r in run.results if r.error is not None],
        "cases": [r.to_json() for r in run.results],
        "usage": {
            "requests": run.requests,
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "total_tokens": run.prompt_tokens + run.completion_tokens,
        },
        "config": run.extra,
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def ragas_document(
    run: RagRun, labels: RunLabels, thresholds: Mapping[str, float], max_failures: int = 0
) -> dict[str, Any]:
    metrics: dict[str, dict[str, Any]] = {}
    per_stratum: dict[str, dict[str, float | None]] = {}
    failed_by_metric: dict[str, int] = {}
    for f in run.failures:
        failed_by_metric[f.metric] = failed_by_metric.get(f.metric, 0) + 1
    strata = sorted({r["stratum"] for r in run.rows})
    for name in run.value_names:
        base = "context_precision" if name == "context_precision_simple" else name
        vals = [r["scores"][name] for r in run.rows if name in r["scores"]]
        metrics[name] = _metric_entry(
            name, _mean(vals), len(vals), failed_by_metric.get(base, 0), thresholds
        )
        for s in strata:
            sv = [r["scores"][name] for r in run.rows if r["stratum"] == s and name in r["scores"]]
            per_stratum.setdefault(s, {})[name] = _mean(sv)
    failed_rows = len({f.row_id for f in run.failures})
    return {
        **_head("ragas", labels),
        "metrics": metrics,
        "per_stratum": per_stratum,
        "gate": _gate(
            metrics,
            failed_rows,
            max_failures,
            empty_shard=bool(labels.shard) and not run.rows and not run.failures,
        ),
        "failures": [f.to_json() for f in run.failures],
        "skipped": [f.to_json() for f in run.skipped],
        "rows": run.rows,
        "usage": run.usage,
        "judge": run.judge,
        "duration_s": round(run.duration_s, 3),
    }


def retrieval_document(
    run: RetrievalRun, labels: RunLabels, thresholds: Mapping[str, float], max_failures: int = 0
) -> dict[str, Any]:
    """A ``retrieval`` run: the judge-free metrics per row, their means, latency percentiles."""
    names = (
        [*QUALITY_METRICS, LATENCY]
        if any(LATENCY in r["scores"] for r in run.rows)
        else [*QUALITY_METRICS]
    )
    failed = len({f.row_id for f in run.failures})
    metrics: dict[str, dict[str, Any]] = {}
    per_stratum: dict[str, dict[str, float | None]] = {}
    strata = sorted({r["stratum"] for r in run.rows})
    for name in names:
        vals = [r["scores"][name] for r in run.rows if name in r["scores"]]
        metrics[name] = _metric_entry(name, _mean(vals), len(vals), failed, thresholds)
        for st in strata:
            sv = [r["scores"][name] for r in run.rows if r["stratum"] == st and name in r["scores"]]
            per_stratum.setdefault(st, {})[name] = _mean(sv)
    if LATENCY in metrics:
        metrics[LATENCY]["direction"] = "max"
    latencies = [r["scores"][LATENCY] for r in run.rows if LATENCY in r["scores"]]
    return {
        **_head("retrieval", labels),
        "metrics": metrics,
        "per_stratum": per_stratum,
        "latency": {
            "calls": len(latencies),
            "p50_seconds": percentile(latencies, 50),
            "p99_seconds": percentile(latencies, 99),
        },
        "gate": _gate(metrics, failed, max_failures),
        "failures": [f.to_json() for f in run.failures],
        "skipped": [f.to_json() for f in run.skipped],
        "rows": run.rows,
        "usage": {"total_tokens": 0},
        "config": {**run.config, "k": run.k},
        "duration_s": round(run.duration_s, 3),
    }


def _clean(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def write_document(doc: Mapping[str, Any], path: Path | str) -> None:
    Path(path).write_text(
        json.dumps(_clean(dict(doc)), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def read_document(path: Path | str) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetError(f"not a readable result document: {exc}", path=str(p)) from None
    if not isinstance(doc, dict) or doc.get("kind") not in RESULT_KINDS:
        raise DatasetError(
            "not a sleuth eval result (field 'kind' must be tsa, ragas or retrieval)",
            path=str(p),
            field="kind",
        )
    return doc
