"""Qdrant access shared by ``vector_search`` and ``sleuth ingest``: client, collection, ids.

A point is one chunk. Its id is a UUIDv5 of ``(document id, chunk index)``, so re-ingesting a
document overwrites its points instead of adding copies. Its payload::

    {"document_id": "...", "source": "contracts/a.md", "title": "...", "chunk_index": 0,
     "text": "...", "content_sha256": "...", "metadata": {"provider": "Provider A", ...}}

Filters from the model match ``metadata.<key>`` exactly.
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
        vectors = info.config.params.vectors
        size = getattr(vectors, "size", None)
        if size is not None and size != dimension:
            raise ValueError(
                f"collection {name!r} holds vectors of size {size}, the embedder makes "
                f"{dimension}; use another collection or --recreate"
            )
        return
    await client.create_collection(
        name, vectors_config=models.VectorParams(size=dimension, distance=models.Distance.COSINE)
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
