"""ToolBinding: one tool (vector_search, sql_query or web_search) bound to one AgentDeployment.

The operator runs the tool in its own service (``sleuth tool-service``), with the tool's
credentials mounted there and nowhere else, behind a NetworkPolicy that admits only the agent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.fields import (
    BoundToolType,
    CacheTtlSeconds,
    ModelName,
    ToolDescription,
    ToolName,
    ToolTimeoutSeconds,
)
from sleuth.core.api.v1alpha1.approval import ApprovalSpec, approval_rules, tables_rule_message
from sleuth.core.api.v1alpha1.common import (
    LocalObjectRef,
    Resources,
    SecretKeyRef,
    SpecModel,
    StatusModel,
)
from sleuth.core.api.v1alpha1.limits import HttpLimitsSpec

ToolType = BoundToolType

# type → the spec field holding that type's settings.
TYPE_FIELDS: dict[str, str] = {
    "vector_search": "vectorSearch",
    "sql_query": "sqlQuery",
    "web_search": "webSearch",
}

URL_PATTERN = r"^https?://[^\s/]+(/\S*)?$"
SQL_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"


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


class SqlParameter(SpecModel):
    """One typed parameter of a named query template ($1 is the first)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.allowedValues) || self.type == 'string'",
                    "message": "allowedValues is only for parameters of type string",
                    "fieldPath": ".allowedValues",
                }
            ]
        }
    )

    name: str = Field(
        min_length=1, max_length=64, pattern=r"^[a-z_][a-z0-9_]*$", description="Parameter name."
    )
    type: Literal["string", "integer", "number", "boolean", "date"] = Field(
        description="JSON type the model must supply."
    )
    description: str = Field(
        default="", max_length=1024, description="What the model should put here."
    )
    allowed_values: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description=(
            "For a string parameter, the only values accepted (a JSON Schema enum the model "
            "sees). The deterministic router fills such a parameter from the question."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @model_validator(mode="after")
    def _enum_only_for_strings(self) -> SqlParameter:
        if self.allowed_values is not None and self.type != "string":
            raise ValueError("allowedValues is only for parameters of type string")
        return self


class SqlTemplate(SpecModel):
    """A named, fixed SELECT offered to the model as its own function."""

    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_-]*$",
        description="Function name the model sees.",
    )
    description: str = Field(
        min_length=1, max_length=4096, description="When to use this query (and when not)."
    )
    sql: str = Field(
        min_length=1,
        max_length=16384,
        description="One SELECT with $1..$n placeholders; checked by the SQL guard.",
    )
    parameters: list[SqlParameter] = Field(
        default_factory=list,
        max_length=32,
        description="Parameters in placeholder order.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class SqlQuerySpec(SpecModel):
    """Read-only SQL over an allowlist of PostgreSQL tables."""

    connection_secret_ref: SecretKeyRef = Field(
        description="Secret key holding the PostgreSQL connection URI of a SELECT-only role."
    )
    allowed_tables: list[str] = Field(
        min_length=1,
        max_length=256,
        description="Tables (optionally schema-qualified) the model may read; all others are "
        "refused.",
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            "items": {"type": "string", "pattern": SQL_IDENTIFIER, "maxLength": 127},
        },
    )
    max_rows: int = Field(
        default=100, ge=1, le=10000, description="Rows returned at most; the result says when cut."
    )
    statement_timeout_seconds: int = Field(
        default=5, ge=1, le=300, description="PostgreSQL statement_timeout of each query."
    )
    pool_size: int = Field(
        default=4,
        ge=1,
        le=100,
        description="Database connections each tool service replica keeps at most. Size it to the "
        "SQL calls in flight at the agent's peak (see docs/tools.md); the database role must "
        "allow replicas x poolSize connections.",
    )
    acquire_timeout_seconds: int = Field(
        default=2,
        ge=1,
        le=60,
        description="How long a call waits for a free connection; then it fails at once with a "
        "busy error (the agent may retry) instead of queueing until the tool times out.",
    )
    templates: list[SqlTemplate] | None = Field(
        default=None,
        max_length=64,
        description="Named query templates, each its own function for the model.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class WebSearchSpec(SpecModel):
    """Public web search through a provider. Queries leave the cluster: an explicit opt-in."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.allowExternal == true",
                    "message": "spec.webSearch.allowExternal must be true: web_search sends "
                    "queries outside the cluster",
                }
            ]
        }
    )

    provider: Literal["searxng"] = Field(
        default="searxng", description="Search provider API (SearxNG's JSON API)."
    )
    url: str = Field(
        max_length=2048,
        pattern=URL_PATTERN,
        description="Provider base URL, e.g. http://searxng:8080.",
    )
    allow_external: bool = Field(
        description="Must be true: acknowledges that queries are sent outside the cluster."
    )
    api_key_secret_ref: SecretKeyRef | None = Field(
        default=None, description="Secret key holding the provider API key, if needed."
    )

    @model_validator(mode="after")
    def _opt_in(self) -> WebSearchSpec:
        if not self.allow_external:
            raise ValueError("spec.webSearch.allowExternal must be true")
        return self


def _type_rules() -> list[JsonValue]:
    return [
        {
            "rule": f"(self.type == '{tool}') == has(self.{field})",
            "message": f"spec.{field} is required when type is {tool}, and forbidden otherwise",
        }
        for tool, field in TYPE_FIELDS.items()
    ]


_EMBEDDED_REPLICAS: dict[str, JsonValue] = {
    "rule": "!has(self.vectorSearch) || !has(self.vectorSearch.embedded) || self.replicas <= 1",
    "message": "spec.replicas: an embedded Qdrant store is opened by one process at a time; "
    "use at most 1 replica, or a Qdrant server (spec.vectorSearch.url)",
}


class ToolBindingSpec(SpecModel):
    """Desired state of a ToolBinding."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [*_type_rules(), _EMBEDDED_REPLICAS, *approval_rules()]
        }
    )

    agent_ref: LocalObjectRef = Field(
        description="The AgentDeployment (same namespace) this tool is offered to."
    )
    type: ToolType = Field(description="Kind of tool: vector_search, sql_query or web_search.")
    name: ToolName | None = Field(
        default=None,
        description="Function name the model sees; defaults to type. Unique within the agent.",
    )
    description: ToolDescription | None = Field(
        default=None,
        description="What the model reads to choose this tool. Defaults to the built-in "
        "description of the type, with its NOT-for exclusions.",
    )
    timeout_seconds: ToolTimeoutSeconds = Field(
        default=10, description="Timeout of one call of this tool."
    )
    cache_ttl_seconds: CacheTtlSeconds | None = Field(
        default=None,
        alias="cacheTTLSeconds",
        description="Result cache TTL; 0 disables caching. Defaults to the agent's "
        "toolCacheTTLSeconds.",
    )
    replicas: int = Field(default=1, ge=0, le=64, description="Tool service replicas.")
    max_concurrent_calls: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="Tool executions one replica runs at once (identical concurrent calls share "
        "one execution); beyond it a call is refused at once as busy (503 with Retry-After).",
    )
    limits: HttpLimitsSpec | None = Field(
        default=None,
        description="What one request to the tool service may carry and how long a client may "
        "take to send it; omit for the defaults.",
    )
    image: str | None = Field(
        default=None,
        min_length=1,
        max_length=512,
        description="sleuth image running `sleuth tool-service`; defaults to the operator's "
        "workload image (its `--image`, the chart's `image` value), not the operator's own image.",
    )
    resources: Resources | None = Field(
        default=None, description="CPU and memory of each tool service pod."
    )
    vector_search: VectorSearchSpec | None = Field(
        default=None, description="Settings of a vector_search tool."
    )
    sql_query: SqlQuerySpec | None = Field(
        default=None, description="Settings of a sql_query tool."
    )
    web_search: WebSearchSpec | None = Field(
        default=None, description="Settings of a web_search tool."
    )
    approval: ApprovalSpec | None = Field(
        default=None,
        description="A person approves a call before the tool runs: always, or when a rule "
        "matches. The run pauses (A2A: input-required; the OpenAI API: an answer saying how to "
        "approve); only the caller who started it may decide, and only with the approve grant "
        "(spec.agent.access.callers[].grants). Omit: calls run as the model makes them.",
    )

    @model_validator(mode="after")
    def _settings_match_type(self) -> ToolBindingSpec:
        wire = self.to_wire()
        for tool, field in TYPE_FIELDS.items():
            if (self.type == tool) != (field in wire):
                raise ValueError(
                    f"spec.{field} is required when type is {tool}, and forbidden otherwise"
                )
        return self

    @model_validator(mode="after")
    def _embedded_single_replica(self) -> ToolBindingSpec:
        if self.vector_search and self.vector_search.embedded and self.replicas > 1:
            raise ValueError(str(_EMBEDDED_REPLICAS["message"]))
        return self

    @model_validator(mode="after")
    def _approval_fits_the_tool(self) -> ToolBindingSpec:
        match = self.approval.match if self.approval is not None else None
        if match is None or not match.tables:
            return self
        wrong_type = tables_rule_message(self.type)
        if wrong_type is not None:
            raise ValueError(wrong_type)
        allowed = set(self.sql_query.allowed_tables if self.sql_query else ())
        unknown = [t for t in match.tables if t not in allowed]
        if unknown:
            raise ValueError(
                f"spec.approval.match.tables: {', '.join(unknown)} not in "
                "spec.sqlQuery.allowedTables (a call could never read it)"
            )
        return self

    @property
    def tool_name(self) -> str:
        """The function name the model sees."""
        return self.name or self.type


class ToolBindingStatus(StatusModel):
    """Observed state of a ToolBinding, written by the operator."""

    tool_name: str | None = Field(default=None, description="Function name the model sees.")
    endpoint: str | None = Field(default=None, description="URL of the tool service.")


__all__ = [
    "EMBEDDED_QDRANT_MOUNT",
    "TYPE_FIELDS",
    "ChunkingSpec",
    "EmbeddedQdrantSpec",
    "EmbeddingSpec",
    "HybridSpec",
    "RerankerSpec",
    "SqlParameter",
    "SqlQuerySpec",
    "SqlTemplate",
    "ToolBindingSpec",
    "ToolBindingStatus",
    "ToolType",
    "VectorSearchSpec",
    "WebSearchSpec",
]
