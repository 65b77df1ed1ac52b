"""``sleuth eval compare A.json B.json``: is configuration B better than A, beyond chance?

Two results of the same kind (``retrieval`` or ``ragas``), on the same dataset (name and
SHA-256) and split, are paired row by row: a row counts for a metric when both runs scored it.
For each metric, with ``d_i = B_i - A_i`` over the ``n`` pairs:

- **the difference**: mean of ``d``;
- **a 95 % confidence interval** (``--confidence``): percentile bootstrap over the pairs
  (``--resamples`` resamples of the ``n`` pairs with replacement, seeded);
- **a p-value**: the paired randomisation (sign-flip permutation) test of "A and B are
  exchangeable within each pair": each ``d_i`` keeps or flips its sign at random, and ``p`` is the
  share of flips whose mean difference is at least as far from 0 as the observed one (two-sided,
  ``(1 + hits) / (1 + resamples)``; exact enumeration when ``n <= 16``).

Why this test and not a paired t-test or Wilcoxon: per-row scores are bounded and discrete
(recall is often 0 or 1, precision steps of 1/K), heavily tied and skewed, so the t-test's
normal approximation is poor at the sizes golden sets have; Wilcoxon's signed-rank test drops the
zero differences (most pairs, when two configurations agree) and tests a shift in ranks rather
than the mean difference the interval describes. The sign-flip test assumes nothing about the
distribution, keeps every pair, and tests exactly the statistic it reports. No correction for
testing several metrics at once is applied: read a p-value near 0.05 on one of five metrics with
care.

Comparing on the frozen ``test`` split is allowed but warned about: choosing a configuration by
its test-split score is tuning on the test split (the Goodhart rule of docs/evals.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleuth.evals.errors import EvalError

COMPARABLE_KINDS = ("retrieval", "ragas")
LOWER_IS_BETTER = frozenset({"latency_seconds", "noise_sensitivity"})
EXACT_UP_TO = 16
_BATCH = 2000


@dataclass(frozen=True)
class Comparison:
    metric: str
    n: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None
    low: float | None
    high: float | None
    p_value: float | None

    @property
    def lower_is_better(self) -> bool:
        return self.metric in LOWER_IS_BETTER

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "lower_is_better": self.lower_is_better}

    def line(self) -> str:
        """``B − A on context_recall_id: +0.080 [+0.030, +0.130], p = 0.004, n = 300``."""
        if self.difference is None or self.low is None or self.high is None:
            return f"B − A on {self.metric}: no pairs scored by both runs"
        scale, unit = (1000.0, " ms") if self.metric == "latency_seconds" else (1.0, "")
        d, lo, hi = self.difference * scale, self.low * scale, self.high * scale
        tail = " (lower is better)" if self.lower_is_better else ""
        return (
            f"B − A on {self.metric}: {d:+.3f}{unit} [{lo:+.3f}, {hi:+.3f}], "
            f"p = {_p(self.p_value)}, n = {self.n}{tail}"
        )


def _p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def check_comparable(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Refuse results that cannot be paired; return warnings about those that can."""
    for doc, name in ((a, "A"), (b, "B")):
        if doc.get("kind") not in COMPARABLE_KINDS:
            raise EvalError(
                f"{name} is a {doc.get('kind')!r} result; compare takes "
                f"{' or '.join(COMPARABLE_KINDS)}"
            )
    for key in ("kind", "dataset", "dataset_sha256", "split"):
        if a.get(key) != b.get(key):
            raise EvalError(
                f"cannot compare runs with different {key}: A has {a.get(key)!r}, B has "
                f"{b.get(key)!r} (pair rows of one dataset and split only)"
            )
    warnings = []
    if a.get("split") in {"test", "all"}:
        warnings.append(
            f"warning: both runs scored the frozen {a['split']!r} split; choosing a "
            "configuration by this comparison tunes on the test split. Compare on --split dev "
            "and keep the test split for the final report."
        )
    return warnings


def pairs(a: Mapping[str, Any], b: Mapping[str, Any], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """The two runs' scores of ``metric`` on the rows both scored, in row-id order."""
    sa = {r["id"]: r["scores"][metric] for r in a["rows"] if metric in r.get("scores", {})}
    sb = {r["id"]: r["scores"][metric] for r in b["rows"] if metric in r.get("scores", {})}
    ids = sorted(set(sa) & set(sb))
    return (
        np.array([sa[i] for i in ids], dtype=np.float64),
        np.array([sb[i] for i in ids], dtype=np.float64),
    )


def bootstrap_interval(
    d: np.ndarray, rng: np.random.Generator, resamples: int, confidence: float
) -> tuple[float, float]:
    means = np.empty(resamples)
    for start in range(0, resamples, _BATCH):
        size = min(_BATCH, resamples - start)
        idx = rng.integers(0, d.size, size=(size, d.size))
        means[start : start + size] = d[idx].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def sign_flip_p(d: np.ndarray, rng: np.random.Generator, resamples: int) -> float:
    observed = abs(d.mean())
    tolerance = 1e-12
    if not np.any(d):
        return 1.0
    if d.size <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=d.size)))
        flipped = np.abs((signs * d).mean(axis=1))
        return float(np.mean(flipped >= observed - tolerance))
    hits = 0
    for start in range(0, resamples, _BATCH):
        size = min(_BATCH, resamples - start)
        signs = rng.choice((-1.0, 1.0), size=(size, d.size))
        hits += int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - tolerance))
    return (1 + hits) / (1 + resamples)


def compare_metric(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    metric: str,
    *,
    resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    xa, xb = pairs(a, b, metric)
    if xa.size == 0:
        return Comparison(metric, 0, None, None, None, None, None, None)
    d = xb - xa
    rng = np.random.default_rng(seed)
    low, high = bootstrap_interval(d, rng, resamples, confidence)
    return Comparison(
        metric=metric,
        n=int(d.size),
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        difference=float(d.mean()),
        low=low,
        high=high,
        p_value=sign_flip_p(d, rng, resamples),
    )


def compare(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    metrics: Sequence[str] | None = None,
    *,
    resamples: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The comparison document (JSON): labels of both runs, warnings, one entry per metric."""
    if resamples < 100:
        raise EvalError(f"--resamples {resamples}: use at least 100")
    if not 0.5 <= confidence < 1:
        raise EvalError(f"--confidence {confidence}: expected a value in [0.5, 1)")
    warnings = check_comparable(a, b)
    names = list(metrics) if metrics else [m for m in a["metrics"] if m in b["metrics"]]
    unknown = [m for m in names if m not in a["metrics"] or m not in b["metrics"]]
    if unknown:
        raise EvalError(f"metrics not in both results: {unknown}")
    results = [
        compare_metric(a, b, m, resamples=resamples, confidence=confidence, seed=seed)
        for m in names
    ]
    return {
        "kind": "comparison",
        "of": a["kind"],
        "dataset": a.get("dataset"),
        "dataset_sha256": a.get("dataset_sha256"),
        "split": a.get("split"),
        "a": {"created": a.get("created"), "config": a.get("config") or a.get("judge")},
        "b": {"created": b.get("created"), "config": b.get("config") or b.get("judge")},
        "method": {
            "difference": "mean of B - A over the rows both runs scored",
            "interval": f"percentile bootstrap, {resamples} resamples, {confidence:.0%}",
            "test": f"paired sign-flip permutation test, two-sided, {resamples} resamples "
            f"(exact when n <= {EXACT_UP_TO})",
            "seed": seed,
        },
        "warnings": warnings,
        "metrics": [c.to_json() for c in results],
        "lines": [c.line() for c in results],
    }
