"""``spec.vectorSearch`` of a ToolBinding: a Qdrant collection, its embeddings, hybrid search,
the reranker and the chunking the collection is ingested with."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.fields import ModelName
from sleuth.core.api.v1alpha1.common import URL_PATTERN, SecretKeyRef, SpecModel


class EmbeddingSpec(SpecModel):
    """An OpenAI-compatible embeddings endpoint that turns queries into vectors."""

    endpoint: str = Field(
        max_length=2048,
        pattern=URL_PATTERN,
        description="Base URL of the embeddings API, including /v1.",
    )
    model: ModelName = Field(description="Embedding model name sent to the endpoint.")
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the embeddings API key, if needed."
    )


# Where the tool service pod mounts an embedded store's claim (renderer and tool service agree).
EMBEDDED_QDRANT_MOUNT = "/var/lib/sleuth/qdrant"


class EmbeddedQdrantSpec(SpecModel):
    """Qdrant's embedded (local) mode on a PersistentVolumeClaim, instead of a Qdrant server.

    For one tool-service replica and for tests: Qdrant's local mode lets one process open the
    storage at a time. Fill it with a Job running `sleuth ingest --qdrant-path` on the same claim
    before the ToolBinding is applied.
    """

    claim_name: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        description="PersistentVolumeClaim (same namespace) holding the local-mode storage.",
    )
    path: str = Field(
        default="qdrant",
        min_length=1,
        max_length=255,
        pattern=r"^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$",
        description="Folder of the storage inside the claim (relative, no '..').",
    )


class HybridSpec(SpecModel):
    """Hybrid retrieval: dense (embedding) and sparse (BM25-style keyword) search, fused by Qdrant.

    The collection must hold both vectors (``sleuth ingest`` writes both). Keyword matches find
    exact names, numbers and clause references that embeddings blur; fusion keeps the passages
    both sides rank well.
    """

    fusion: Literal["rrf", "dbsf"] = Field(
        default="rrf",
        description="How Qdrant fuses the two rankings: rrf (reciprocal rank fusion) or dbsf "
        "(distribution-based score fusion).",
    )


class RerankerSpec(SpecModel):
    """A reranking model (a cross-encoder) that reorders the candidates before the final topK.

    When it fails or exceeds its timeout, the tool keeps the retrieval order and says so; the
    call still succeeds.
    """

    endpoint: str = Field(
        max_length=2048,
        pattern=URL_PATTERN,
        description="Base URL of the rerank server, e.g. http://reranker:8000 (without /v1).",
    )
    api: Literal["cohere", "tei"] = Field(
        default="cohere",
        description="Wire format: cohere is POST /v1/rerank {model, query, documents, top_n}, "
        "the Cohere/Jina-compatible API vLLM serves; tei is POST /rerank {query, texts}, Hugging "
        "Face text-embeddings-inference.",
    )
    model: ModelName | None = Field(
        default=None, description="Model name sent to the server (cohere API; vLLM's served name)."
    )
    timeout_seconds: int = Field(
        default=2,
        ge=1,
        le=60,
        description="Time allowed for one rerank request; beyond it the retrieval order is kept.",
    )
    score_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Drop candidates whose rerank relevance score is below this (0-1). Not "
        "applied when the reranker failed.",
    )
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the rerank server's API key, if needed."
    )


class ChunkingSpec(SpecModel):
    """How `sleuth ingest --binding` splits documents into passages for this collection.

    Recorded on every ingested passage; the tool service reports a collection chunked otherwise
    as not ready (re-ingest it with `sleuth ingest --binding`).
    """

    size: int = Field(default=800, ge=100, le=8000, description="Largest passage, in characters.")
    overlap: int = Field(
        default=150,
        ge=0,
        le=4000,
        description="Characters each passage repeats from the end of the previous one; less "
        "than half of size.",
    )

    @model_validator(mode="after")
    def _overlap_below_half(self) -> ChunkingSpec:
        if self.overlap >= self.size // 2:
            raise ValueError("spec.vectorSearch.chunking.overlap must be less than half of size")
        return self


class VectorSearchSpec(SpecModel):
    """Semantic search over a Qdrant collection."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.url) != has(self.embedded)",
                    "message": "spec.vectorSearch: set exactly one of url (a Qdrant server) and "
                    "embedded (Qdrant's local mode on a PersistentVolumeClaim)",
                },
                {
                    "rule": "!has(self.candidates) || self.candidates >= self.topK",
                    "message": "spec.vectorSearch.candidates must be at least topK",
                    "fieldPath": ".candidates",
                },
            ]
        }
    )

    url: str | None = Field(
        default=None,
        max_length=2048,
        pattern=URL_PATTERN,
        description="Qdrant URL, e.g. http://qdrant:6333. Exactly one of url and embedded.",
    )
    embedded: EmbeddedQdrantSpec | None = Field(
        default=None,
        description="Qdrant's embedded mode on a PersistentVolumeClaim (one replica; tests and "
        "single-node setups). Exactly one of url and embedded.",
    )
    collection: str = Field(
        min_length=1, max_length=255, description="Qdrant collection holding the documents."
    )
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the Qdrant API key, if needed."
    )
    top_k: int = Field(default=5, ge=1, le=20, description="Passages returned by default.")
    embedding: EmbeddingSpec | None = Field(
        default=None,
        description="Embeddings endpoint; omit to use the tool service's built-in local model.",
    )
    score_threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Relevance cut-off: passages whose cosine similarity to the query is below "
        "this are never returned (in hybrid mode too), so a call may return fewer than topK or "
        "none. Omit for no cut-off.",
    )
    hybrid: HybridSpec | None = Field(
        default=None,
        description="Dense plus sparse (BM25-style) retrieval fused by Qdrant; omit for dense "
        "only.",
    )
    candidates: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Passages each retrieval side fetches before fusion, the cut-off and the "
        "reranker narrow them to topK (default 20; never fewer than the call's top_k).",
    )
    reranker: RerankerSpec | None = Field(
        default=None, description="Rerank the candidates with a cross-encoder before topK."
    )
    chunking: ChunkingSpec | None = Field(
        default=None,
        description="Passage size and overlap the collection is ingested with (`sleuth ingest "
        "--binding`); omit to accept any.",
    )

    @model_validator(mode="after")
    def _one_store(self) -> VectorSearchSpec:
        if (self.url is None) == (self.embedded is None):
            raise ValueError(
                "spec.vectorSearch: set exactly one of url (a Qdrant server) and embedded "
                "(Qdrant's local mode on a PersistentVolumeClaim)"
            )
        return self

    @model_validator(mode="after")
    def _candidates_cover_top_k(self) -> VectorSearchSpec:
        if self.candidates is not None and self.candidates < self.top_k:
            raise ValueError("spec.vectorSearch.candidates must be at least topK")
        return self


__all__ = [
    "EMBEDDED_QDRANT_MOUNT",
    "ChunkingSpec",
    "EmbeddedQdrantSpec",
    "EmbeddingSpec",
    "HybridSpec",
    "RerankerSpec",
    "VectorSearchSpec",
]
