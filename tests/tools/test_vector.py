"""vector_search and ingestion with the real local model and Qdrant's local mode."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from sleuth.tools.base import ToolArgumentError
from sleuth.tools.ingest import Document, ingest, parse_document, sample_documents
from sleuth.tools.sample.contracts import SEED_SEARCH
from sleuth.tools.sample.documents import INJECTION_DOCUMENT_ID
from sleuth.tools.vector.chunking import ChunkSettings, chunk_text
from sleuth.tools.vector.store import QdrantLocation
from sleuth.tools.vector.tool import VectorSearchTool, VectorToolConfig


@pytest.mark.unit
def test_chunks_overlap_and_respect_size() -> None:
    text = " ".join(f"Sentence number {i} talks about clause {i}." for i in range(200))
    settings = ChunkSettings(size=300, overlap=60)
    chunks = chunk_text(text, settings)
    assert len(chunks) > 5
    assert all(len(c) <= 300 for c in chunks)
    for previous, current in itertools.pairwise(chunks):
        assert current[:20] in previous  # the next chunk starts inside the previous one
    assert chunk_text(text, settings) == chunks
    assert chunk_text("   \n\n ", settings) == []


@pytest.mark.unit
def test_front_matter_sets_id_title_and_metadata() -> None:
    doc = parse_document("a/b.md", "---\nid: doc-1\nprovider: Provider A\n---\n# Title\n\nBody")
    assert (doc.id, doc.title, doc.source) == ("doc-1", "Title", "a/b.md")
    assert doc.metadata == {"provider": "Provider A"}
    assert parse_document("x/y.txt", "plain").id == "x/y.txt"


@pytest.mark.integration
def test_local_model_ranks_meaning(local_embedder: Any) -> None:
    vectors = local_embedder.embed_sync(
        [
            "penalty for late delivery",
            "a fine is charged when goods arrive after the agreed date",
            "hotel costs are reimbursed up to a cap",
        ]
    )
    assert len(vectors[0]) == 384
    norms = [sum(v * v for v in vec) ** 0.5 for vec in vectors]
    assert all(abs(n - 1.0) < 1e-5 for n in norms)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(vectors[0], vectors[1]) > cos(vectors[0], vectors[2]) + 0.2


async def _tool(path: Path, embedder: Any) -> VectorSearchTool:
    client = QdrantLocation(path=str(path)).client()
    return VectorSearchTool(
        client, embedder, VectorToolConfig(collection="contracts"), owns_client=True
    )


@pytest.mark.integration
async def test_seed_search_finds_the_recurring_clauses(
    sample_qdrant: Path, local_embedder: Any
) -> None:
    tool = await _tool(sample_qdrant, local_embedder)
    try:
        out = await tool.call({"query": SEED_SEARCH, "top_k": 5})
    finally:
        await tool.aclose()
    ids = [r["document_id"] for r in out.content["results"]]
    assert {
        "contract-provider-a-2025",
        "contract-provider-b-2025",
        "contract-provider-c-2025",
    } <= set(ids)
    texts = " ".join(r["text"] for r in out.content["results"])
    assert "2% per month" in texts
    assert "capped at 4% per year" in texts
    assert len(out.citations) == 5
    assert all(
        c.source.startswith(("contracts/", "policies/", "procedures/", "uploads/"))
        for c in out.citations
    )
    assert "not instructions" in out.content["note"]


@pytest.mark.integration
async def test_filters_and_top_k(sample_qdrant: Path, local_embedder: Any) -> None:
    tool = await _tool(sample_qdrant, local_embedder)
    try:
        out = await tool.call(
            {"query": "price revision", "top_k": 3, "filters": {"provider": "Provider C"}}
        )
        with pytest.raises(ToolArgumentError, match="top_k"):
            await tool.call({"query": "x", "top_k": 0})
        with pytest.raises(ToolArgumentError, match="unknown argument"):
            await tool.call({"query": "x", "k": 3})
    finally:
        await tool.aclose()
    assert [r["document_id"] for r in out.content["results"]] == ["contract-provider-c-2025"]
    assert "CPI" in out.content["results"][0]["text"]


@pytest.mark.integration
async def test_injection_document_is_retrievable(sample_qdrant: Path, local_embedder: Any) -> None:
    tool = await _tool(sample_qdrant, local_embedder)
    try:
        out = await tool.call(
            {"query": "special conditions for 2025 supplier contracts", "top_k": 9}
        )
    finally:
        await tool.aclose()
    assert INJECTION_DOCUMENT_ID in [r["document_id"] for r in out.content["results"]]


@pytest.mark.integration
async def test_reingest_does_not_duplicate_and_drops_stale_chunks(
    tmp_path: Path, local_embedder: Any
) -> None:
    client = QdrantLocation(path=str(tmp_path / "q")).client()
    long_text = "\n\n".join(f"Paragraph {i}: " + "words " * 40 for i in range(6))
    docs = [Document(id="d1", source="d1.md", title="D1", text=long_text)]
    settings = ChunkSettings(size=300, overlap=50)
    try:
        first = await ingest(docs, client, local_embedder, "c", settings=settings, progress=False)
        count1 = (await client.count("c", exact=True)).count
        await ingest(docs, client, local_embedder, "c", settings=settings, progress=False)
        assert (await client.count("c", exact=True)).count == count1 == first.chunks > 1
        short = [Document(id="d1", source="d1.md", title="D1", text="Only one paragraph now.")]
        report = await ingest(short, client, local_embedder, "c", settings=settings, progress=False)
        assert report.stale_deleted == count1 - 1
        assert (await client.count("c", exact=True)).count == 1
    finally:
        await client.close()


@pytest.mark.unit
def test_sample_documents_carry_the_seed_clauses() -> None:
    docs = {d.id: d for d in sample_documents()}
    assert "Clause 8.3" in docs["contract-provider-a-2025"].text
    assert "Clause 8.3" in docs["contract-provider-b-2025"].text
    assert "Clause 7.1" in docs["contract-provider-c-2025"].text
    assert "DROP TABLE" in docs[INJECTION_DOCUMENT_ID].text


@pytest.mark.integration
def test_local_model_matches_reference_implementation(local_embedder: Any) -> None:
    """Vectors recorded once from sentence-transformers (PyTorch) on the same packaged weights."""
    import json

    reference = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
    ours = local_embedder.embed_sync(reference["texts"])
    for text, mine, theirs in zip(reference["texts"], ours, reference["vectors"], strict=True):
        cosine = sum(a * b for a, b in zip(mine, theirs, strict=True))
        assert cosine > 1 - 1e-4, text
