"""The OpenAI-compatible embeddings client against the scripted server's /v1/embeddings."""

from __future__ import annotations

import math

import pytest
from qdrant_client import AsyncQdrantClient

from sleuth.core.embeddings import EmbeddingsUnavailable, OpenAIEmbedder
from sleuth.scripted import ScriptedServer
from sleuth.tools.ingest import ingest, sample_documents
from sleuth.tools.vector.tool import VectorSearchTool, VectorToolConfig

pytestmark = pytest.mark.integration


async def test_endpoint_vectors_are_unit_length_and_ordered(scripted: ScriptedServer) -> None:
    embedder = OpenAIEmbedder(scripted.url, "scripted")
    try:
        assert await embedder.probe() == 16
        vectors = await embedder.embed(["first text", "second text", "first text"])
    finally:
        await embedder.aclose()
    assert len(vectors) == 3
    assert all(math.isclose(sum(v * v for v in vec), 1.0, rel_tol=1e-9) for vec in vectors)
    assert vectors[0] == vectors[2]
    assert vectors[0] != vectors[1]


async def test_ingest_and_search_through_the_endpoint(scripted: ScriptedServer) -> None:
    embedder = OpenAIEmbedder(scripted.url, "scripted")
    client = AsyncQdrantClient(location=":memory:")
    try:
        await embedder.probe()
        report = await ingest(sample_documents(), client, embedder, "docs", progress=False)
        assert report.chunks == len(sample_documents())
        tool = VectorSearchTool(client, embedder, VectorToolConfig(collection="docs", top_k=3))
        out = await tool.call({"query": "late-delivery penalty"})
        assert len(out.content["results"]) == 3
    finally:
        await client.close()
        await embedder.aclose()


async def test_endpoint_down_is_unavailable() -> None:
    embedder = OpenAIEmbedder("http://127.0.0.1:9/v1", "x", timeout_seconds=2)
    try:
        with pytest.raises(EmbeddingsUnavailable, match="embeddings endpoint unreachable"):
            await embedder.embed(["x"])
    finally:
        await embedder.aclose()
