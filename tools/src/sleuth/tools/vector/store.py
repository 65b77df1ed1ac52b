"""Qdrant access shared by ``vector_search`` and ``sleuth ingest``: client, collection, ids.

A point is one chunk. Its id is a UUIDv5 of ``(document id, chunk index)``, so re-ingesting a
document overwrites its points instead of adding copies. It holds two named vectors: ``dense``
(the embedding, cosine) and ``bm25`` (the sparse keyword vector of
:mod:`sleuth.tools.vector.sparse`, with Qdrant's IDF modifier), so one collection serves
dense and hybrid retrieval alike. Its payload::

    {"document_id": "...", "source": "contracts/a.md", "title": "...", "chunk_index": 0,
     "text": "...", "content_sha256": "...", "metadata": {"provider": "Provider A", ...},
     "chunking": {"size": 800, "overlap": 150}}

Filters from the model match ``metadata.<key>`` exactly. Collections written by an earlier
``sleuth ingest`` hold one unnamed dense vector: they still serve dense retrieval
(:class:`Layout` tells them apart); hybrid retrieval needs them re-ingested.
"""

from __future__ import annotations

import uuid
import warnings
from dataclasses import dataclass
from typing import Any

from qdrant_client import AsyncQdrantClient, models

POINT_NAMESPACE = uuid.UUID("5b0c6f1e-7c1a-4d5e-9a57-51e07b3f0c11")


@dataclass(frozen=True)
class QdrantLocation:
    """Where the collection lives: a Qdrant URL, a local-mode folder, or memory."""

    url: str | None = None
    path: str | None = None
    api_key: str | None = None

    def client(self) -> AsyncQdrantClient:
        if self.url:
            return AsyncQdrantClient(url=self.url, api_key=self.api_key, timeout=10)
        if self.path:
            return AsyncQdrantClient(path=self.path)
        return AsyncQdrantClient(location=":memory:")

    def describe(self) -> str:
        return self.url or (f"local:{self.path}" if self.path else "local:memory")


DENSE = "dense"
SPARSE = "bm25"


@dataclass(frozen=True)
class Layout:
    """Which vectors a collection holds: the dense vector's name (None: the unnamed vector of a
    single-vector collection), and whether it has the sparse keyword vector."""

    dense: str | None
    sparse: bool

    @classmethod
    def of(cls, info: models.CollectionInfo) -> Layout:
        vectors = info.config.params.vectors
        sparse = info.config.params.sparse_vectors or {}
        dense = DENSE if isinstance(vectors, dict) and DENSE in vectors else None
        return cls(dense=dense, sparse=SPARSE in sparse)


def point_id(document_id: str, chunk_index: int) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, f"{document_id}#{chunk_index}"))


async def ensure_collection(
    client: AsyncQdrantClient, name: str, dimension: int, *, recreate: bool = False
) -> None:
    """Create the collection (cosine, ``dimension``) unless it exists with that size."""
    exists = await client.collection_exists(name)
    if exists and recreate:
        await client.delete_collection(name)
        exists = False
    if exists:
        info = await client.get_collection(name)
        if not Layout.of(info).sparse:
            raise ValueError(
                f"collection {name!r} was written by an earlier sleuth ingest (one unnamed "
                f"vector, no {SPARSE!r} keyword vector); use another collection or --recreate"
            )
        vectors = info.config.params.vectors
        size = vectors[DENSE].size if isinstance(vectors, dict) else None
        if size is not None and size != dimension:
            raise ValueError(
                f"collection {name!r} holds vectors of size {size}, the embedder makes "
                f"{dimension}; use another collection or --recreate"
            )
        return
    await client.create_collection(
        name,
        vectors_config={
            DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)
        },
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    with warnings.catch_warnings():  # local mode warns that payload indexes do nothing there
        warnings.simplefilter("ignore", UserWarning)
        await client.create_payload_index(name, "document_id", models.PayloadSchemaType.KEYWORD)


def metadata_filter(filters: dict[str, Any] | None) -> models.Filter | None:
    if not filters:
        return None
    return models.Filter(
        must=[
            models.FieldCondition(key=f"metadata.{key}", match=models.MatchValue(value=value))
            for key, value in sorted(filters.items())
        ]
    )
