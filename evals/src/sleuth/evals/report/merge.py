"""Merging the results of shards (an Indexed Job's completions) into one run.

Means are recomputed from the rows or cases, never averaged across shards; failures, skips and
token usage add up. Shards must agree on kind, agent, dataset, split and checksum, and no row may
appear twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sleuth.evals.errors import EvalError
from sleuth.evals.rag.runner import Failure, RagRun
from sleuth.evals.report.results import RunLabels, ragas_document, tsa_document
from sleuth.evals.tsa.runner import TsaRun
from sleuth.evals.tsa.scoring import CaseResult

_SAME = ("kind", "agent", "dataset", "split", "dataset_sha256")


def _check(docs: Sequence[dict[str, Any]]) -> None:
    if not docs:
        raise EvalError("nothing to merge")
    for key in _SAME:
        values = {d.get(key) for d in docs}
        if len(values) > 1:
            raise EvalError(
                f"cannot merge results with different {key}: {sorted(map(str, values))}"
            )


def _thresholds(doc: dict[str, Any]) -> dict[str, float]:
    return {n: m["threshold"] for n, m in doc["metrics"].items() if m["threshold"] is not None}


def _unique(ids: list[str]) -> None:
    counts: dict[str, int] = {}
    for i in ids:
        counts[i] = counts.get(i, 0) + 1
    dup = sorted(i for i, n in counts.items() if n > 1)
    if dup:
        raise EvalError(f"rows or cases present in more than one shard: {dup[:10]}")


def _sum_usage(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for d in docs:
        for k, v in (d.get("usage") or {}).items():
            if isinstance(v, int | float):
                out[k] = out.get(k, 0) + v
    return out


def merge(docs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    _check(docs)
    first = docs[0]
    labels = RunLabels(
        first["agent"],
        first["dataset"],
        first["split"],
        first.get("dataset_sha256", ""),
    )
    shards = [str(d.get("shard", "")) for d in docs]
    max_failures = int(first["gate"].get("max_failures", 0))
    if first["kind"] == "tsa":
        cases = [c for d in docs for c in d["cases"]]
        _unique([c["id"] for c in cases])
        usage = _sum_usage(docs)
        tsa_run = TsaRun(
            results=[CaseResult.from_json(c) for c in cases],
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            requests=int(usage.get("requests", 0)),
            extra=first.get("config", {}),
        )
        doc = tsa_document(tsa_run, labels, _thresholds(first), max_failures)
        return {**doc, "merged_shards": shards}
    rows = [r for d in docs for r in d["rows"]]
    _unique([r["id"] for r in rows])

    def failures(key: str) -> list[Failure]:
        return [Failure(**f) for d in docs for f in d.get(key, [])]

    value_names = list(first["metrics"])
    rag_run = RagRun(
        rows=rows,
        failures=failures("failures"),
        metrics=value_names,
        usage=_sum_usage(docs),
        judge=first.get("judge", {}),
        duration_s=max(float(d.get("duration_s", 0)) for d in docs),
        value_names=value_names,
        skipped=failures("skipped"),
    )
    doc = ragas_document(rag_run, labels, _thresholds(first), max_failures)
    return {**doc, "merged_shards": shards}
