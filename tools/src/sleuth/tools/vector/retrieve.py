"""The retrieval pipeline behind ``vector_search``: candidates, fusion, cut-off, rerank, top K.

1. **Candidates.** Dense only: Qdrant's nearest neighbours of the query embedding. Hybrid: two
   prefetches, dense and sparse (BM25-style, :mod:`sleuth.tools.vector.sparse`), each
   ``candidates`` long, fused by Qdrant (``rrf`` or ``dbsf``); the dense vectors come back with
   the points so that every candidate also gets its cosine similarity to the query.
2. **Relevance cut-off** (``scoreThreshold``): candidates whose cosine similarity is below it are
   dropped — in hybrid mode too, so a keyword-only match with no semantic relation to the
   question does not get through.
3. **Rerank** (``reranker``): the remaining candidates are scored by the rerank server and
   reordered; its own cut-off drops low scores. When the server fails or is too slow the
   retrieval order stands and the result says so.
4. The first ``top_k`` remain.

The collection is checked before the first search (and by the readiness probe): hybrid needs the
sparse vector, and a binding that states its chunking needs passages cut that way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from sleuth.tools.vector.rerank import Reranker, RerankFailed
from sleuth.tools.vector.sparse import encode_query
from sleuth.tools.vector.store import SPARSE, Layout, metadata_filter

log = logging.getLogger(__name__)

DEFAULT_CANDIDATES = 20


@dataclass(frozen=True)
class RetrievalSettings:
    """The binding's retrieval knobs (``spec.vectorSearch``)."""

    fusion: Literal["rrf", "dbsf"] | None = None
    """``None``: dense only; else hybrid with this fusion."""
    candidates: int = DEFAULT_CANDIDATES
    score_threshold: float | None = None
    rerank_threshold: float | None = None
    chunking: tuple[int, int] | None = None
    """(size, overlap) the collection must have been ingested with; ``None``: any."""


@dataclass
class Passage:
    payload: dict[str, Any]
    score: float
    """Cosine similarity of the passage to the query."""
    rerank_score: float | None = None


@dataclass
class Retrieval:
    passages: list[Passage]
    reranked: bool = False
    rerank_error: str | None = None
    below_threshold: int = 0
    notes: list[str] = field(default_factory=list)


class CollectionProblem(Exception):
    """The collection cannot serve this binding's settings (the message says how to fix it)."""


class Retriever:
    """Runs the pipeline over one collection of one Qdrant client."""

    def __init__(
        self,
        client: AsyncQdrantClient,
        collection: str,
        settings: RetrievalSettings,
        reranker: Reranker | None = None,
    ) -> None:
        self._client = client
        self._collection = collection
        self._settings = settings
        self._reranker = reranker
        self._layout: Layout | None = None

    async def layout(self) -> Layout:
        """The collection's layout, checked against the settings (cached once it passed)."""
        if self._layout is not None:
            return self._layout
        info = await self._client.get_collection(self._collection)
        layout = Layout.of(info)
        name = self._collection
        if self._settings.fusion is not None and not layout.sparse:
            raise CollectionProblem(
                f"collection {name!r} has no {SPARSE!r} keyword vectors, which hybrid retrieval "
                "(spec.vectorSearch.hybrid) needs: it was written by an earlier sleuth ingest; "
                "re-ingest it with `sleuth ingest --recreate`"
            )
        if self._settings.chunking is not None:
            await self._check_chunking(self._settings.chunking)
        self._layout = layout
        return layout

    async def _check_chunking(self, expected: tuple[int, int]) -> None:
        points, _ = await self._client.scroll(
            self._collection, limit=1, with_payload=["chunking"], with_vectors=False
        )
        if not points:
            return
        recorded = (points[0].payload or {}).get("chunking") or {}
        found = (recorded.get("size"), recorded.get("overlap"))
        if found != expected:
            said = f"size {found[0]}, overlap {found[1]}" if recorded else "no recorded chunking"
            raise CollectionProblem(
                f"collection {self._collection!r} was ingested with {said}; "
                f"spec.vectorSearch.chunking says size {expected[0]}, overlap {expected[1]}: "
                "re-ingest it with `sleuth ingest --binding`"
            )

    async def _candidates(
        self, layout: Layout, query: str, vector: list[float], limit: int, flt: Any
    ) -> list[Passage]:
        fusion = self._settings.fusion
        sparse = encode_query(query) if fusion is not None else None
        if fusion is None or sparse is None or not sparse.indices:
            response = await self._client.query_points(
                self._collection,
                query=vector,
                using=layout.dense,
                limit=limit,
                query_filter=flt,
                score_threshold=self._settings.score_threshold,
                with_payload=True,
            )
            return [Passage(dict(p.payload or {}), float(p.score)) for p in response.points]
        dense_name = layout.dense or ""
        response = await self._client.query_points(
            self._collection,
            prefetch=[
                models.Prefetch(query=vector, using=layout.dense, limit=limit, filter=flt),
                models.Prefetch(
                    query=models.SparseVector(indices=sparse.indices, values=sparse.values),
                    using=SPARSE,
                    limit=limit,
                    filter=flt,
                ),
            ],
            query=models.FusionQuery(
                fusion=models.Fusion.RRF if fusion == "rrf" else models.Fusion.DBSF
            ),
            query_filter=flt,
            limit=limit,
            with_payload=True,
            with_vectors=[dense_name],
        )
        q = np.asarray(vector, dtype=np.float64)
        q /= np.linalg.norm(q) or 1.0
        out = []
        for point in response.points:
            stored = point.vector.get(dense_name) if isinstance(point.vector, dict) else None
            v = np.asarray(stored if stored is not None else [], dtype=np.float64)
            cosine = float(v @ q / (np.linalg.norm(v) or 1.0)) if v.size == q.size else 0.0
            out.append(Passage(dict(point.payload or {}), cosine))
        return out

    async def search(
        self, query: str, vector: list[float], top_k: int, filters: dict[str, Any] | None
    ) -> Retrieval:
        layout = await self.layout()
        wide = self._settings.fusion is not None or self._reranker is not None
        limit = max(top_k, self._settings.candidates) if wide else top_k
        passages = await self._candidates(layout, query, vector, limit, metadata_filter(filters))
        result = Retrieval(passages)
        threshold = self._settings.score_threshold
        if threshold is not None:
            kept = [p for p in passages if p.score >= threshold]
            result.below_threshold = len(passages) - len(kept)
            result.passages = kept
        if self._reranker is not None and result.passages:
            await self._rerank(query, result)
        result.passages = result.passages[:top_k]
        return result

    async def _rerank(self, query: str, result: Retrieval) -> None:
        assert self._reranker is not None
        texts = [str(p.payload.get("text", "")) for p in result.passages]
        try:
            scores = await self._reranker.scores(query, texts)
        except RerankFailed as err:
            result.rerank_error = str(err)
            log.warning("reranker failed, keeping the retrieval order: %s", err)
            return
        for passage, score in zip(result.passages, scores, strict=True):
            passage.rerank_score = score
        ranked = sorted(result.passages, key=lambda p: -(p.rerank_score or 0.0))
        bar = self._settings.rerank_threshold
        if bar is not None:
            kept = [p for p in ranked if (p.rerank_score or 0.0) >= bar]
            result.below_threshold += len(ranked) - len(kept)
            ranked = kept
        result.passages = ranked
        result.reranked = True

    async def aclose(self) -> None:
        if self._reranker is not None:
            await self._reranker.aclose()
