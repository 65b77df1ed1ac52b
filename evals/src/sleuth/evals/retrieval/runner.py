"""Scoring retrieval: a binding's vector_search over the golden questions, or recorded rows.

``run_tool`` asks the tool built from a ToolBinding (the tool service's own builder, in this
process) each golden question with ``top_k = K``, one call at a time so that each call's latency
is its own, and scores what came back (:mod:`sleuth.scoring.retrieval`). ``score_rows``
scores rows recorded from an agent (``context_ids`` against ``reference_context_ids``) the same
way, without calling anything. A failed call is a counted failure of metric ``retrieval``; a
case without anything relevant to find is skipped, listed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.progress import Progress
from sleuth.evals.rag.runner import Failure, RetrievalRun
from sleuth.scoring.retrieval import LATENCY, Item, Retrieved, items_from, score_row
from sleuth.scoring.samples import RagSample
from sleuth.tools.base import Tool, ToolError

RETRIEVAL_METRIC = "retrieval"


def _row(
    row_id: str, stratum: str, split: str, retrieved: Sequence[Retrieved], items: list[Item], k: int
) -> dict[str, Any]:
    return {
        "id": row_id,
        "stratum": stratum,
        "split": split,
        "scores": score_row(retrieved, items, k),
        "retrieved": [p.id for p in retrieved],
    }


def _skip(row_id: str) -> Failure:
    return Failure(row_id, RETRIEVAL_METRIC, "no_reference", "nothing relevant to retrieve")


def _items(case: GoldenCase) -> list[Item]:
    evidence = [(e.document_id, e.text) for e in case.reference_evidence]
    return items_from(case.reference_context_ids, evidence)


def _retrieved(content: Any) -> list[Retrieved]:
    results = content.get("results") if isinstance(content, dict) else None
    out = []
    for r in results or []:
        doc = str(r.get("document_id") or str(r.get("id", "")).rsplit("#", 1)[0])
        out.append(Retrieved(id=str(r.get("id", "")), document_id=doc, text=str(r.get("text", ""))))
    return out


async def run_tool(
    cases: Sequence[GoldenCase], tool: Tool, k: int, *, progress: bool = False
) -> RetrievalRun:
    """Ask ``tool`` every case, one call at a time, and score the results."""
    run = RetrievalRun(rows=[], k=k)
    bar = Progress(len(cases), "retrieval", enabled=progress)
    started = time.perf_counter()
    for case in cases:
        items = _items(case)
        if not items:
            run.skipped.append(_skip(case.id))
            bar.advance()
            continue
        t0 = time.perf_counter()
        try:
            out = await tool.call({"query": case.question, "top_k": k})
        except ToolError as exc:
            run.failures.append(Failure(case.id, RETRIEVAL_METRIC, type(exc).__name__, str(exc)))
            bar.advance(failed=True)
            continue
        latency = time.perf_counter() - t0
        row = _row(case.id, case.stratum, case.split, _retrieved(out.content), items, k)
        row["scores"][LATENCY] = latency
        if isinstance(out.content, dict) and "reranker" in out.content:
            row["reranker"] = out.content["reranker"]
        run.rows.append(row)
        bar.advance()
    run.duration_s = time.perf_counter() - started
    return run


def score_rows(samples: Sequence[RagSample], k: int | None = None) -> RetrievalRun:
    """Score recorded rows by their ids (``k`` defaults to each row's number of contexts)."""
    run = RetrievalRun(rows=[], k=k or 0)
    for s in samples:
        items = items_from(s.reference_context_ids)
        if not items:
            run.skipped.append(_skip(s.id))
            continue
        texts = s.contexts if len(s.contexts) == len(s.context_ids) else [""] * len(s.context_ids)
        retrieved = [
            Retrieved(id=cid, document_id=cid.rsplit("#", 1)[0], text=text)
            for cid, text in zip(s.context_ids, texts, strict=True)
        ]
        run.rows.append(
            _row(s.id, s.stratum, s.split, retrieved, items, k or max(1, len(retrieved)))
        )
    return run
