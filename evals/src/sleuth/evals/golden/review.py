"""Human review: export a 10-20 % sample as CSV, import accept/reject verdicts, drop rejects.

The sample is stratified by stratum and seeded, so two exports of the same dataset agree. The
CSV has columns ``id, stratum, question, reference, reference_context_ids, verdict, comment``;
reviewers fill ``verdict`` with ``accept`` or ``reject``. Importing refuses unknown ids and
verdicts (naming the CSV line), marks reviewed cases ``accepted``/``rejected`` and drops the
rejected ones from the dataset.
"""

from __future__ import annotations

import csv
import math
import random
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from sleuth.core.errors import DatasetError
from sleuth.evals.golden.cases import GoldenCase

COLUMNS = ["id", "stratum", "question", "reference", "reference_context_ids", "verdict", "comment"]


def review_sample(
    cases: Sequence[GoldenCase], fraction: float = 0.15, seed: int = 11
) -> list[GoldenCase]:
    if not 0.10 <= fraction <= 0.20:
        raise ValueError(f"review fraction must be within 0.10..0.20, got {fraction}")
    by_stratum: dict[str, list[GoldenCase]] = defaultdict(list)
    for c in cases:
        by_stratum[c.stratum].append(c)
    rng = random.Random(seed)
    out: list[GoldenCase] = []
    for stratum in sorted(by_stratum):
        items = sorted(by_stratum[stratum], key=lambda c: c.id)
        k = max(1, math.ceil(len(items) * fraction))
        out.extend(rng.sample(items, min(k, len(items))))
    return out


def export_csv(sample: Sequence[GoldenCase], path: Path | str) -> None:
    with Path(path).open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for c in sample:
            w.writerow(
                [
                    c.id,
                    c.stratum,
                    c.question,
                    c.reference,
                    " ".join(c.reference_context_ids),
                    "",
                    "",
                ]
            )


def import_verdicts(
    cases: Sequence[GoldenCase], path: Path | str
) -> tuple[list[GoldenCase], dict[str, int]]:
    """The dataset with verdicts applied and rejected cases dropped, plus counts."""
    by_id = {c.id: c for c in cases}
    verdicts: dict[str, str] = {}
    p = Path(path)
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = {"id", "verdict"} - set(reader.fieldnames or [])
        if missing:
            raise DatasetError(f"missing columns {sorted(missing)}", path=str(p), line=1)
        for row in reader:
            line = reader.line_num
            cid = (row.get("id") or "").strip()
            verdict = (row.get("verdict") or "").strip().lower()
            if cid not in by_id:
                raise DatasetError(f"unknown case id {cid!r}", path=str(p), line=line, field="id")
            if verdict not in {"accept", "reject", ""}:
                raise DatasetError(
                    f"verdict must be accept or reject, got {verdict!r}",
                    path=str(p),
                    line=line,
                    field="verdict",
                )
            if verdict:
                verdicts[cid] = verdict
    out: list[GoldenCase] = []
    counts = {"accepted": 0, "rejected": 0, "unreviewed_in_sample": 0}
    for c in cases:
        v = verdicts.get(c.id)
        if v == "reject":
            counts["rejected"] += 1
            continue
        if v == "accept":
            counts["accepted"] += 1
            out.append(c.model_copy(update={"review": "accepted"}))
        else:
            out.append(c)
    return out, counts
