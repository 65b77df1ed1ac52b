"""The frozen split: a manifest recording each case's content hash and split, with a checksum.

``freeze`` writes ``<dataset>.manifest.json``; ``verify`` recomputes everything and raises
:class:`ManifestError` when a case moved split, changed content, appeared or vanished in the
test split, or the manifest itself was edited. The Goodhart rule lives in :func:`guard_split`:
commands that tune or compare configurations refuse the test split unless the run is a final
report.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sleuth.evals.errors import ManifestError, SplitGuardError
from sleuth.evals.golden.cases import GoldenCase, load_golden
from sleuth.evals.splits import content_hash


def manifest_path(dataset: Path | str) -> Path:
    p = Path(dataset)
    return p.with_name(p.name + ".manifest.json")


def _items(cases: Sequence[GoldenCase]) -> dict[str, dict[str, str]]:
    return {
        c.id: {"hash": content_hash(c.question + "\n" + c.reference), "split": c.split}
        for c in sorted(cases, key=lambda c: c.id)
    }


def _checksum(items: dict[str, dict[str, str]]) -> str:
    canon = json.dumps(items, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def freeze(cases: Sequence[GoldenCase], dataset: Path | str) -> Path:
    items = _items(cases)
    doc = {
        "dataset": Path(dataset).name,
        "created": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "counts": {s: sum(1 for i in items.values() if i["split"] == s) for s in ("dev", "test")},
        "items": items,
        "checksum": _checksum(items),
    }
    out = manifest_path(dataset)
    out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return out


def verify(cases: Sequence[GoldenCase], dataset: Path | str) -> dict[str, Any]:
    """Check ``cases`` against the dataset's manifest; returns the manifest."""
    path = manifest_path(dataset)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        recorded: dict[str, dict[str, str]] = doc["items"]
    except (OSError, ValueError, KeyError) as exc:
        raise ManifestError(f"{path}: missing or unreadable manifest ({exc})") from None
    if _checksum(recorded) != doc.get("checksum"):
        raise ManifestError(f"{path}: checksum mismatch, the manifest was edited")
    current = _items(cases)
    problems = []
    for cid, item in current.items():
        old = recorded.get(cid)
        if old is None:
            if item["split"] == "test":
                problems.append(f"{cid}: new case in the frozen test split")
        elif old["split"] != item["split"]:
            problems.append(f"{cid}: split changed {old['split']} -> {item['split']}")
        elif old["split"] == "test" and old["hash"] != item["hash"]:
            problems.append(f"{cid}: test case content changed")
    for cid, old in recorded.items():
        if old["split"] == "test" and cid not in current:
            problems.append(f"{cid}: test case removed")
    if problems:
        raise ManifestError(f"{path}: " + "; ".join(problems[:10]))
    return dict(doc)


def check_rows_against_golden(rows: Sequence[tuple[str, str]], golden: Path | str) -> None:
    """Verify ``golden`` against its manifest, then each (row id, split) against ``golden``."""
    cases = load_golden(golden)
    verify(cases, golden)
    splits = {c.id: c.split for c in cases}
    problems = []
    for rid, split in rows:
        if rid not in splits:
            problems.append(f"row {rid!r} is not a case of {golden}")
        elif splits[rid] != split:
            problems.append(f"row {rid!r} has split {split}, the golden dataset says {splits[rid]}")
    if problems:
        raise ManifestError("; ".join(problems[:10]))


def guard_split(split: str, final_report: bool) -> None:
    """Refuse the frozen test split for tuning and comparison runs (the Goodhart rule)."""
    if split in {"test", "all"} and not final_report:
        raise SplitGuardError(
            f"--split {split} touches the frozen test split; it is for final reports only. "
            "Tune and compare on --split dev, or pass --final-report for a release report."
        )
