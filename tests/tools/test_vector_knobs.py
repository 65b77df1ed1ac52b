"""The retrieval knobs of vector_search, each run for real: Qdrant's local mode, the real local
embedding model, and the rerank protocol against the scripted rerank server over HTTP (no rerank
model can be had here: the protocol and the fallback are what these tests prove)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from qdrant_client import models

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.scripted import Scenario
from sleuth.scripted.runner import ScriptedServer
from sleuth.scripted.scenario import RerankScript
from sleuth.tools.base import ToolUnavailable
from sleuth.tools.build import build_service_tools
from sleuth.tools.ingest import Document, ingest
from sleuth.tools.vector.chunking import ChunkSettings
from sleuth.tools.vector.rerank import Reranker, RerankerConfig
from sleuth.tools.vector.retrieve import RetrievalSettings
from sleuth.tools.vector.store import QdrantLocation
from sleuth.tools.vector.tool import VectorSearchTool, VectorToolConfig

COLLECTION = "knobs"
ORDERS = ["48213", "48291", "51007", "51044", "60318", "60372"]


def _corpus() -> list[Document]:
    docs = [
        Document(
            id=f"po-{number}",
            source=f"orders/po-{number}.md",
            title=f"Purchase order PO-{number}",
            text=f"Purchase order PO-{number} covers forty pallets of office paper; the finance "
            "team approved it and delivery is due within thirty days.",
        )
        for number in ORDERS
    ]
    docs += [
        Document(
            id="contract-late",
            source="contracts/late.md",
            title="Supply agreement",
            text="Clause 8.3 — Late delivery. If goods arrive after the agreed date, the "
            "provider pays a penalty of 2% per month of delay on the invoiced amount.",
        ),
        Document(
            id="recipe",
            source="misc/recipe.md",
            title="Lemon cake",
            text="Whisk three eggs with sugar, fold in flour and lemon zest, bake for forty "
            "minutes at 180 degrees.",
        ),
        Document(
            id="hiking",
            source="misc/hiking.md",
            title="Club outing",
            text="The hiking club meets on Saturday at the north trailhead; bring water and "
            "sturdy boots.",
        ),
    ]
    return docs


@pytest.fixture(scope="module")
def knobs_qdrant(tmp_path_factory: pytest.TempPathFactory, local_embedder: Any) -> Path:
    path = tmp_path_factory.mktemp("knobs-qdrant")

    async def load() -> None:
        client = QdrantLocation(path=str(path)).client()
        try:
            await ingest(_corpus(), client, local_embedder, COLLECTION, progress=False)
        finally:
            await client.close()

    asyncio.run(load())
    return path


@pytest.fixture
def rerank_server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as server:
        yield server


def _tool(
    path: Path, embedder: Any, retrieval: RetrievalSettings, reranker: Reranker | None = None
) -> VectorSearchTool:
    client = QdrantLocation(path=str(path)).client()
    config = VectorToolConfig(collection=COLLECTION, retrieval=retrieval)
    return VectorSearchTool(client, embedder, config, owns_client=True, reranker=reranker)


@pytest.fixture
async def search(knobs_qdrant: Path, local_embedder: Any) -> AsyncIterator[Any]:
    """``search(retrieval, arguments, reranker=None)`` → the tool's output content."""
    opened: list[VectorSearchTool] = []

    async def run(
        retrieval: RetrievalSettings, arguments: dict[str, Any], reranker: Reranker | None = None
    ) -> dict[str, Any]:
        tool = _tool(knobs_qdrant, local_embedder, retrieval, reranker)
        opened.append(tool)
        out = await tool.call(arguments)
        await tool.aclose()
        opened.remove(tool)
        return dict(out.content)

    yield run
    for tool in opened:
        await tool.aclose()


def _ids(content: dict[str, Any]) -> list[str]:
    return [r["document_id"] for r in content["results"]]


@pytest.mark.integration
async def test_ingest_writes_dense_and_sparse_vectors_and_records_chunking(
    knobs_qdrant: Path,
) -> None:
    client = QdrantLocation(path=str(knobs_qdrant)).client()
    try:
        info = await client.get_collection(COLLECTION)
        points, _ = await client.scroll(COLLECTION, limit=1, with_vectors=True)
    finally:
        await client.close()
    assert set(info.config.params.vectors) == {"dense"}  # type: ignore[arg-type]
    assert info.config.params.sparse_vectors is not None
    assert info.config.params.sparse_vectors["bm25"].modifier == models.Modifier.IDF
    vector = points[0].vector
    assert isinstance(vector, dict)
    assert len(vector["dense"]) == 384  # type: ignore[arg-type]
    assert vector["bm25"].indices  # type: ignore[union-attr]
    assert (points[0].payload or {})["chunking"] == {"size": 800, "overlap": 150}


class BlindEmbedder:
    """One vector for every text: dense retrieval cannot tell passages apart with it, so only
    the sparse side can put the right one first."""

    name = "blind"
    dimension = 8

    async def embed(self, texts: Any) -> list[list[float]]:
        return [[1.0] + [0.0] * 7 for _ in texts]


@pytest.mark.integration
async def test_hybrid_ranks_by_keywords_where_embeddings_cannot(tmp_path: Path) -> None:
    path = tmp_path / "blind"
    client = QdrantLocation(path=str(path)).client()
    await ingest(_corpus(), client, BlindEmbedder(), COLLECTION, progress=False)
    await client.close()
    ranked: dict[str | None, list[list[str]]] = {None: [], "rrf": [], "dbsf": []}
    for fusion in ranked:
        tool = _tool(path, BlindEmbedder(), RetrievalSettings(fusion=fusion))  # type: ignore[arg-type]
        try:
            for number in ORDERS:
                out = await tool.call({"query": f"PO-{number}", "top_k": 3})
                ranked[fusion].append(_ids(out.content))
                # every result carries its cosine similarity, not the fused rank score
                assert all(r["score"] == 1.0 for r in out.content["results"])
        finally:
            await tool.aclose()
    expected = [f"po-{n}" for n in ORDERS]
    # dbsf normalises each side's scores: a side that cannot tell passages apart adds nothing
    assert [r[0] for r in ranked["dbsf"]] == expected
    # rrf adds reciprocal ranks: the blind side's arbitrary first pick can tie-break ahead, but
    # the keyword match is always in the top two
    assert all(e in r[:2] for e, r in zip(expected, ranked["rrf"], strict=True))
    # dense alone cannot: it ranks every query the same way
    assert len({tuple(r) for r in ranked[None]}) == 1


@pytest.mark.integration
async def test_score_threshold_cuts_weak_passages_in_both_modes(search: Any) -> None:
    query = {"query": "what penalty applies when goods are delivered late?", "top_k": 5}
    loose = await search(RetrievalSettings(), query)
    assert len(loose["results"]) == 5
    scores = sorted(r["score"] for r in loose["results"])
    bar = (scores[0] + scores[-1]) / 2
    for fusion in (None, "rrf"):
        cut = await search(RetrievalSettings(fusion=fusion, score_threshold=bar), query)
        assert 1 <= len(cut["results"]) < 5
        assert all(r["score"] >= bar for r in cut["results"])
        assert _ids(cut)[0] == "contract-late"
    none = await search(RetrievalSettings(fusion="rrf", score_threshold=0.99), query)
    assert none["results"] == []


@pytest.mark.integration
@pytest.mark.parametrize("api", ["cohere", "tei"])
async def test_reranker_reorders_candidates_and_speaks_the_wire_format(
    search: Any, rerank_server: ScriptedServer, api: str
) -> None:
    rerank_server.set_scenario(
        Scenario(rerank=RerankScript(scores={"PO-60372": 0.97, "lemon zest": 0.91}))
    )
    reranker = Reranker(
        RerankerConfig(endpoint=rerank_server.base_url, api=api, model="bge-reranker")  # type: ignore[arg-type]
    )
    content = await search(
        RetrievalSettings(candidates=9), {"query": "quarterly figures", "top_k": 2}, reranker
    )
    assert _ids(content) == ["po-60372", "recipe"]
    assert [r["rerank_score"] for r in content["results"]] == [0.97, 0.91]
    assert "reranker" not in content
    async with httpx.AsyncClient() as client:
        seen = (await client.get(f"{rerank_server.base_url}/_scripted/requests?kind=rerank")).json()
    [request] = seen
    if api == "tei":
        assert request["path"] == "/rerank"
        assert request["query"] == "quarterly figures"
        assert len(request["texts"]) == 9  # all candidates, not top_k
        assert request["raw_scores"] is False
    else:
        assert request["path"] == "/v1/rerank"
        assert request["model"] == "bge-reranker"
        assert len(request["documents"]) == request["top_n"] == 9


@pytest.mark.integration
@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (RerankScript(delay_ms=1500), "no answer within 0.3 s"),
        (RerankScript(status=503), "HTTP 503"),
        (RerankScript(malformed=True), "is not one of the"),
    ],
)
async def test_a_failing_reranker_leaves_the_retrieval_order(
    search: Any, rerank_server: ScriptedServer, script: RerankScript, reason: str
) -> None:
    query = {"query": "late delivery penalty", "top_k": 3}
    plain = await search(RetrievalSettings(), query)
    rerank_server.set_scenario(Scenario(rerank=script))
    reranker = Reranker(RerankerConfig(endpoint=rerank_server.base_url, timeout_seconds=0.3))
    content = await search(RetrievalSettings(), query, reranker)
    assert _ids(content) == _ids(plain)
    assert reason in content["reranker"]
    assert "retrieval order" in content["reranker"]
    assert all("rerank_score" not in r for r in content["results"])


@pytest.mark.integration
async def test_rerank_threshold_drops_low_scores(
    search: Any, rerank_server: ScriptedServer
) -> None:
    rerank_server.set_scenario(Scenario(rerank=RerankScript(scores={"Clause 8.3": 0.9})))
    reranker = Reranker(RerankerConfig(endpoint=rerank_server.base_url, api="tei"))
    content = await search(
        RetrievalSettings(rerank_threshold=0.5),
        {"query": "zzz unrelated words", "top_k": 5},
        reranker,
    )
    assert _ids(content) == ["contract-late"]


@pytest.mark.integration
async def test_collection_checks_name_the_fix(
    knobs_qdrant: Path, local_embedder: Any, tmp_path: Path
) -> None:
    chunked = _tool(knobs_qdrant, local_embedder, RetrievalSettings(chunking=(400, 50)))
    try:
        assert not await chunked.ready()
        problem = await chunked.problem()
        assert problem is not None
        assert "size 800, overlap 150" in problem
        with pytest.raises(ToolUnavailable, match=r"spec\.vectorSearch\.chunking says size 400"):
            await chunked.call({"query": "x"})
    finally:
        await chunked.aclose()
    same = _tool(knobs_qdrant, local_embedder, RetrievalSettings(chunking=(800, 150)))
    try:
        assert await same.ready()
    finally:
        await same.aclose()
    # A collection of the earlier layout (one unnamed vector) serves dense retrieval only.
    legacy = tmp_path / "legacy"
    client = QdrantLocation(path=str(legacy)).client()
    await client.create_collection(
        COLLECTION,
        vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE),
    )
    [vector] = await local_embedder.embed(["late delivery penalty"])
    await client.upsert(
        COLLECTION,
        points=[
            models.PointStruct(
                id=1, vector=vector, payload={"document_id": "old", "chunk_index": 0, "text": "t"}
            )
        ],
    )
    await client.close()
    dense = _tool(legacy, local_embedder, RetrievalSettings())
    try:
        assert _ids((await dense.call({"query": "penalty"})).content) == ["old"]
    finally:
        await dense.aclose()
    hybrid = _tool(legacy, local_embedder, RetrievalSettings(fusion="rrf"))
    try:
        assert not await hybrid.ready()
        with pytest.raises(ToolUnavailable, match="sleuth ingest --recreate"):
            await hybrid.call({"query": "penalty"})
    finally:
        await hybrid.aclose()


@pytest.mark.integration
async def test_binding_spec_builds_every_knob(
    knobs_qdrant: Path, tmp_path: Path, rerank_server: ScriptedServer
) -> None:
    """The ToolBinding fields reach the tool: the same builder the tool service uses."""
    import shutil

    copy = tmp_path / "q"
    shutil.copytree(knobs_qdrant, copy)
    rerank_server.set_scenario(
        Scenario(rerank=RerankScript(scores={"PO-48213": 0.99, "Purchase order": 0.2}))
    )
    spec = ToolBindingSpec.model_validate(
        {
            "agentRef": {"name": "a"},
            "type": "vector_search",
            "vectorSearch": {
                "url": "http://qdrant.invalid:6333",
                "collection": COLLECTION,
                "topK": 2,
                "scoreThreshold": 0.05,
                "hybrid": {"fusion": "rrf"},
                "candidates": 9,
                "reranker": {"endpoint": rerank_server.base_url, "api": "tei"},
                "chunking": {"size": 800, "overlap": 150},
            },
        }
    )
    built = await build_service_tools(spec, {"SLEUTH_QDRANT_PATH": str(copy)})
    try:
        assert await built.ready()
        out = await built.tools["vector_search"].call({"query": "office paper order"})
    finally:
        await built.aclose()
    assert len(out.content["results"]) == 2
    assert out.content["results"][0]["document_id"] == "po-48213"
    assert out.content["results"][0]["rerank_score"] == 0.99


@pytest.mark.unit
def test_chunk_settings_follow_the_spec_bounds() -> None:
    with pytest.raises(ValueError, match="less than half"):
        ToolBindingSpec.model_validate(
            {
                "agentRef": {"name": "a"},
                "type": "vector_search",
                "vectorSearch": {
                    "url": "http://q:6333",
                    "collection": "c",
                    "chunking": {"size": 400, "overlap": 200},
                },
            }
        )
    with pytest.raises(ValueError, match="candidates must be at least topK"):
        ToolBindingSpec.model_validate(
            {
                "agentRef": {"name": "a"},
                "type": "vector_search",
                "vectorSearch": {
                    "url": "http://q:6333",
                    "collection": "c",
                    "topK": 8,
                    "candidates": 5,
                },
            }
        )
    assert ChunkSettings(size=400, overlap=199).overlap == 199


@pytest.mark.unit
def test_sparse_vectors_are_bm25_term_frequencies() -> None:
    from sleuth.tools.vector import sparse

    assert sparse.terms("The Penalties of the Clauses") == ["penalty", "clause"]
    query = sparse.encode_query("penalty penalty clause")
    assert query.values == [1.0, 1.0]
    assert query.indices == sorted(sparse.term_index(t) for t in ("penalty", "clause"))
    assert sparse.term_index("penalty") == sparse.term_index("penalty") < 2**31
    once = sparse.encode_passage("penalty")
    thrice = sparse.encode_passage("penalty penalty penalty")
    # saturates: three occurrences weigh more than one, but far less than three times as much
    assert once.values[0] < thrice.values[0] < 3 * once.values[0]
    long = sparse.encode_passage("penalty " + "filler " * 300)
    assert long.values[long.indices.index(sparse.term_index("penalty"))] < once.values[0]
    assert sparse.encode_query("the of and").indices == []


@pytest.mark.unit
@pytest.mark.parametrize(
    ("api", "body", "reason"),
    [
        ("cohere", {"data": []}, "no results list"),
        ("cohere", {"results": [{"index": 0, "relevance_score": "high"}]}, "not a finite"),
        ("tei", [{"index": 0, "score": 0.5}], "1 of 2 documents came back without"),
        ("tei", [{"index": True, "score": 0.5}], "is not one of the 2"),
        ("tei", {"results": []}, "not a list"),
    ],
)
def test_rerank_answers_that_are_not_the_protocol_fail(api: str, body: Any, reason: str) -> None:
    from sleuth.tools.vector.rerank import RerankFailed, _parse

    with pytest.raises(RerankFailed, match=reason):
        _parse(api, body, 2)


@pytest.mark.integration
def test_tool_service_process_serves_the_knobs_and_reports_a_chunking_drift(
    knobs_qdrant: Path, tmp_path: Path, rerank_server: ScriptedServer
) -> None:
    """`sleuth tool-service` as a process: hybrid + cut-off + reranker over real HTTP, and a
    binding whose chunking differs from the collection's is not ready."""
    import shutil

    from tests.tools.service_process import ServiceProcess

    rerank_server.set_scenario(
        Scenario(rerank=RerankScript(scores={"PO-51007": 0.95, "Purchase order": 0.1}))
    )
    vector: dict[str, Any] = {
        "url": "http://qdrant.invalid:6333",
        "collection": COLLECTION,
        "topK": 2,
        "scoreThreshold": 0.05,
        "hybrid": {"fusion": "rrf"},
        "reranker": {"endpoint": rerank_server.base_url},
    }
    for name, chunking, ready in (("ok", (800, 150), True), ("drift", (400, 50), False)):
        copy = tmp_path / name
        shutil.copytree(knobs_qdrant, copy)
        binding = {
            "agentRef": {"name": "a"},
            "type": "vector_search",
            "vectorSearch": {**vector, "chunking": {"size": chunking[0], "overlap": chunking[1]}},
        }
        service = ServiceProcess(binding, tmp_path, {"SLEUTH_QDRANT_PATH": str(copy)})
        try:
            service.wait_healthy()
            status = httpx.get(f"{service.url}/readyz", timeout=10).status_code
            assert status == (200 if ready else 503)
            call = httpx.post(
                f"{service.url}/v1/tools/vector_search/call",
                json={"arguments": {"query": "paper orders"}},
                timeout=30,
            )
            if ready:
                results = call.json()["content"]["results"]
                assert len(results) == 2
                assert results[0]["document_id"] == "po-51007"
                assert results[0]["rerank_score"] == 0.95
            else:
                assert call.status_code == 503
                assert "spec.vectorSearch.chunking says size 400" in call.text
        finally:
            service.stop()
