"""Retrieval metrics without a judge: relevance is known by id (or by evidence text).

A row is what one call retrieved, in rank order (:class:`Retrieved`), against what the golden case
says is relevant. The *items* a row needs are its evidence entries when the case has any, else
its ``reference_context_ids``. A retrieved passage **covers** an item when:

- evidence ``{document_id, text}``: the passage comes from that document and contains the text
  (case and whitespace ignored) — independent of the chunking, so chunk sizes can be compared;
- an id with ``#`` (``contract-7#2``): the passage's id is exactly that (ragas' id-based form);
- an id without ``#`` (``contract-7``): the passage comes from that document.

With ``K`` the number of passages asked for (the call's ``top_k``) and ``n`` those returned:

=========================  ======================================================================
``context_precision_id``   passages that cover at least one item / ``n``; 0 when ``n`` is 0
``context_recall_id``      items covered by some passage / items
``mrr``                    1 / rank of the first passage covering an item (0 if none)
``ndcg``                   DCG of the ranking / the ideal DCG, at ``K``; a passage gains 1 when it
                           covers an item no earlier passage covered (a second copy of the same
                           evidence, e.g. from an overlapping chunk, gains nothing); ideal:
                           ``min(K, items)`` gains at the top ranks
=========================  ======================================================================

A case with no items (an unanswerable question) has nothing to measure: it is skipped, listed.
An empty result on an answerable case scores 0 everywhere, so a cut-off that is too strict
shows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

CONTEXT_PRECISION_ID = "context_precision_id"
CONTEXT_RECALL_ID = "context_recall_id"
MRR = "mrr"
NDCG = "ndcg"
LATENCY = "latency_seconds"
QUALITY_METRICS = (CONTEXT_PRECISION_ID, CONTEXT_RECALL_ID, MRR, NDCG)
LOWER_IS_BETTER = frozenset({LATENCY})


@dataclass(frozen=True)
class Retrieved:
    """One retrieved passage: its id (``document#index``), document and text."""

    id: str
    document_id: str
    text: str = ""


@dataclass(frozen=True)
class Item:
    """Something relevant the row needs: evidence text in a document, or an id."""

    document_id: str
    chunk_id: str | None = None
    text: str | None = None


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def items_from(
    reference_ids: Sequence[str], evidence: Sequence[tuple[str, str]] = ()
) -> list[Item]:
    """The row's items: evidence entries when there are any, else the reference ids."""
    if evidence:
        return [Item(document_id=d, text=_norm(t)) for d, t in evidence]
    out = []
    for ref in reference_ids:
        if "#" in ref:
            out.append(Item(document_id=ref.rsplit("#", 1)[0], chunk_id=ref))
        else:
            out.append(Item(document_id=ref))
    return out


def covers(passage: Retrieved, item: Item) -> bool:
    if item.text is not None:
        return passage.document_id == item.document_id and item.text in _norm(passage.text)
    if item.chunk_id is not None:
        return passage.id == item.chunk_id
    return passage.document_id == item.document_id


def score_row(retrieved: Sequence[Retrieved], items: Sequence[Item], k: int) -> dict[str, float]:
    """The four metrics of one row (``items`` must not be empty)."""
    hits = [{i for i, item in enumerate(items) if covers(p, item)} for p in retrieved]
    relevant = [bool(h) for h in hits]
    covered: set[int] = set()
    dcg = 0.0
    for rank, h in enumerate(hits[:k]):
        if h - covered:
            dcg += 1.0 / math.log2(rank + 2)
        covered |= h
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(k, len(items))))
    first = next((rank for rank, r in enumerate(relevant) if r), None)
    all_covered = set().union(*hits) if hits else set()
    return {
        CONTEXT_PRECISION_ID: sum(relevant) / len(retrieved) if retrieved else 0.0,
        CONTEXT_RECALL_ID: len(all_covered) / len(items),
        MRR: 0.0 if first is None else 1.0 / (first + 1),
        NDCG: dcg / ideal if ideal else 0.0,
    }


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), linear between closest ranks; None without values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
