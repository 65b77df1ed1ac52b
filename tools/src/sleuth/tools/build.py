"""Build the tool(s) of one ToolBinding spec, connected, from the spec and the environment.

The one place tools are built: what a tool service serves (:mod:`sleuth.tools.service`) and
what the agent connects in its own process when a tool has no endpoint (:mod:`sleuth.tools.local`)
come from the same builders. Credentials come only from the environment:

=============================  ==============================================================
``SLEUTH_SQL_CONNECTION_URI``  PostgreSQL DSN of the SELECT-only role (sql_query, required)
``SLEUTH_QDRANT_API_KEY``      Qdrant API key (vector_search, optional)
``SLEUTH_EMBEDDING_API_KEY``   embeddings endpoint key (vector_search, optional)
``SLEUTH_RERANKER_API_KEY``    rerank server key (vector_search with a reranker, optional)
``SLEUTH_WEB_SEARCH_API_KEY``  provider key (web_search, optional)
``SLEUTH_QDRANT_PATH``         one machine: a Qdrant local-mode folder instead of ``url``
=============================  ==============================================================

A sql_query binding with templates serves one function per template and nothing else: no
free-form SQL surface at all when templates are configured.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import asyncpg
from qdrant_client import AsyncQdrantClient

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.vectorsearch import EMBEDDED_QDRANT_MOUNT
from sleuth.core.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from sleuth.core.errors import ConfigError
from sleuth.core.sql.guard import GuardPolicy
from sleuth.tools.base import Tool
from sleuth.tools.sql.executor import SqlLimits
from sleuth.tools.sql.templates import template_tools
from sleuth.tools.sql.tool import SqlQueryTool, SqlToolConfig, create_pool
from sleuth.tools.vector.rerank import Reranker, RerankerConfig
from sleuth.tools.vector.retrieve import DEFAULT_CANDIDATES, RetrievalSettings
from sleuth.tools.vector.store import QdrantLocation
from sleuth.tools.vector.tool import VectorSearchTool, VectorToolConfig
from sleuth.tools.web.searxng import SearxNG
from sleuth.tools.web.tool import WebSearchTool, WebToolConfig

log = logging.getLogger("sleuth.tools")

ReadyCheck = Callable[[], Awaitable[bool]]
Closer = Callable[[], Awaitable[None]]


class ServiceConfigError(ConfigError):
    """The binding's configuration is invalid or a credential is missing.

    The message is for the operator (the tool service's one-line exit, the agent's log) and may
    name a file path; ``public`` says the same without paths or addresses, for where a client
    reads it — the tool's error when the agent builds the tool in its own process
    (:mod:`sleuth.tools.local`). Without ``public``, a client reads only that the configuration
    cannot be used."""

    def __init__(self, message: str, *, public: str | None = None) -> None:
        super().__init__(message)
        self.public = public


@dataclass
class ServiceTools:
    """The tools of one binding (served by a tool service, or run in the agent's process), how
    to tell they are ready, and how to close them."""

    kind: str
    tools: dict[str, Tool]
    ready: ReadyCheck
    closers: list[Closer] = field(default_factory=list)

    async def aclose(self) -> None:
        for close in reversed(self.closers):
            await close()


def _redact(text: str, dsn: str) -> str:
    """``text`` without the password of ``dsn`` (should a message ever quote it)."""
    try:
        password = urlsplit(dsn).password
    except ValueError:
        password = None
    return text.replace(password, "***") if password else text


async def check_dsn(dsn: str, timeout_s: float) -> None:
    """Fail at start-up, naming the setting, when the connection URI cannot be used at all.

    One connection is tried: a URI asyncpg cannot parse is a :class:`ServiceConfigError`; a
    database that is down or refuses the role is only logged (the service starts unready, and
    calls say what is wrong), so a database outage never stops the tool service from starting.
    """
    try:
        conn = await asyncio.wait_for(asyncpg.connect(dsn), timeout_s)
    except (ValueError, asyncpg.ClientConfigurationError) as err:
        raise ServiceConfigError(
            f"SLEUTH_SQL_CONNECTION_URI cannot be used: {_redact(str(err), dsn)}",
            public=f"SLEUTH_SQL_CONNECTION_URI cannot be used ({type(err).__name__})",
        ) from None
    except Exception as err:  # down, unreachable, wrong credentials: serve, unready
        log.warning(
            "sql_query: no database connection at start-up (%s); serving unready",
            type(err).__name__,
        )
        return
    await conn.close()


async def _sql(spec: ToolBindingSpec, env: Mapping[str, str]) -> ServiceTools:
    settings = spec.sql_query
    assert settings is not None
    dsn = env.get("SLEUTH_SQL_CONNECTION_URI")
    if not dsn:
        missing = "SLEUTH_SQL_CONNECTION_URI is not set (the SELECT-only role's DSN)"
        raise ServiceConfigError(missing, public=missing)
    limits = SqlLimits(
        max_rows=settings.max_rows,
        statement_timeout_seconds=float(settings.statement_timeout_seconds),
        acquire_timeout_seconds=float(settings.acquire_timeout_seconds),
    )
    await check_dsn(dsn, float(settings.acquire_timeout_seconds))
    pool = await create_pool(dsn, max_size=settings.pool_size)
    tools: dict[str, Tool] = {}
    if settings.templates:
        policy = GuardPolicy.of(settings.allowed_tables)
        for tool in template_tools(pool, list(settings.templates), policy, limits):
            tools[tool.spec.name] = tool
    else:
        config = SqlToolConfig(
            allowed_tables=tuple(settings.allowed_tables),
            limits=limits,
            name=spec.tool_name,
            description=spec.description,
        )
        sql_tool = SqlQueryTool(pool, config)
        tools[sql_tool.spec.name] = sql_tool

    async def ready() -> bool:
        try:
            async with pool.acquire(timeout=2) as conn:
                return bool(await conn.fetchval("SELECT 1", timeout=2) == 1)
        except Exception:
            return False

    return ServiceTools("sql_query", tools, ready, [pool.close])


def open_local_store(path: str, setting: str) -> AsyncQdrantClient:
    """A Qdrant local-mode store that must already exist: serving never creates one (ingest
    does), and every way a path can be wrong is one line naming the setting."""
    fill = "; fill it with `sleuth ingest --qdrant-path` first"
    label = setting.split(" (")[0]  # SLEUTH_QDRANT_PATH, vectorSearch.embedded

    def refused(problem: str, hint: str = "", detail: str = "") -> ServiceConfigError:
        return ServiceConfigError(
            f"{setting}: {path} {problem}{detail}{hint}",
            public=f"{label}: the Qdrant local store {problem}",
        )

    if not os.path.exists(path):
        raise refused("does not exist", fill)
    if not os.path.isdir(path):
        raise refused("is not a folder", " (a Qdrant local store is)")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise refused("is not readable and writable by this process")
    if not os.path.isdir(os.path.join(path, "collection")):
        raise refused("holds no Qdrant store", fill)
    try:
        return AsyncQdrantClient(path=path)
    except RuntimeError as err:
        if "already accessed" in str(err):
            hint = " (Qdrant's local mode allows one at a time); stop it, or use a Qdrant server"
            raise refused("is open in another process", hint) from None
        raise refused(f"cannot be opened as a Qdrant store ({type(err).__name__})") from None
    except Exception as err:  # a corrupt store: sqlite, JSON or pickle errors
        raise refused(
            "cannot be opened as a Qdrant store, it may be corrupt",
            detail=f" ({type(err).__name__}: {str(err)[:120]})",
        ) from None


async def _vector(spec: ToolBindingSpec, env: Mapping[str, str]) -> ServiceTools:
    settings = spec.vector_search
    assert settings is not None
    local_path = env.get("SLEUTH_QDRANT_PATH")
    setting = "SLEUTH_QDRANT_PATH"
    if not local_path and settings.embedded is not None:
        local_path = f"{EMBEDDED_QDRANT_MOUNT}/{settings.embedded.path}"
        setting = (
            f"vectorSearch.embedded (claim {settings.embedded.claim_name}, "
            f"path {settings.embedded.path})"
        )
    location = QdrantLocation(
        url=None if local_path else settings.url,
        path=local_path or None,
        api_key=env.get("SLEUTH_QDRANT_API_KEY"),
    )
    embedder: Embedder
    closers: list[Closer] = []
    if settings.embedding is not None:
        remote = OpenAIEmbedder(
            settings.embedding.endpoint,
            settings.embedding.model,
            api_key=env.get("SLEUTH_EMBEDDING_API_KEY"),
        )
        closers.append(remote.aclose)
        embedder = remote
    else:
        embedder = LocalEmbedder()
    client = open_local_store(local_path, setting) if local_path else location.client()
    closers.append(client.close)
    rerank = settings.reranker
    retrieval = RetrievalSettings(
        fusion=settings.hybrid.fusion if settings.hybrid else None,
        candidates=settings.candidates or max(DEFAULT_CANDIDATES, settings.top_k),
        score_threshold=settings.score_threshold,
        rerank_threshold=rerank.score_threshold if rerank else None,
        chunking=(settings.chunking.size, settings.chunking.overlap) if settings.chunking else None,
    )
    reranker = None
    if rerank is not None:
        reranker = Reranker(
            RerankerConfig(
                endpoint=rerank.endpoint,
                api=rerank.api,
                model=rerank.model,
                timeout_seconds=float(rerank.timeout_seconds),
                api_key=env.get("SLEUTH_RERANKER_API_KEY"),
            )
        )
    config = VectorToolConfig(
        collection=settings.collection,
        top_k=settings.top_k,
        name=spec.tool_name,
        description=spec.description,
        retrieval=retrieval,
    )
    tool = VectorSearchTool(client, embedder, config, reranker=reranker)
    closers.append(tool.aclose)
    return ServiceTools("vector_search", {tool.spec.name: tool}, tool.ready, closers)


async def _web(spec: ToolBindingSpec, env: Mapping[str, str]) -> ServiceTools:
    settings = spec.web_search
    assert settings is not None
    provider = SearxNG(
        settings.url,
        timeout_seconds=min(5.0, float(spec.timeout_seconds)),
        api_key=env.get("SLEUTH_WEB_SEARCH_API_KEY"),
    )
    config = WebToolConfig(
        allow_external=settings.allow_external, name=spec.tool_name, description=spec.description
    )
    tool = WebSearchTool(provider, config)
    return ServiceTools("web_search", {tool.spec.name: tool}, tool.ready, [provider.aclose])


BUILDERS: dict[str, Callable[[ToolBindingSpec, Mapping[str, str]], Awaitable[ServiceTools]]] = {
    "sql_query": _sql,
    "vector_search": _vector,
    "web_search": _web,
}


async def build_service_tools(spec: ToolBindingSpec, env: Mapping[str, str]) -> ServiceTools:
    """The tools of one binding, connected (pools and clients open)."""
    return await BUILDERS[spec.type](spec, env)
