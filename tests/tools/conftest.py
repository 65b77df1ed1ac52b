"""Fixtures of the tools' tests: a real PostgreSQL (pgserver) holding the seed's sample data.

One server per test session, in a temporary folder. The owner (``postgres``) loads
:mod:`sleuth.tools.sample.contracts`; ``docs/sql/readonly-role.sql`` creates the SELECT-only role
the
tool connects as (so the documented snippet is exercised). :func:`table_checksums` hashes every
table, the relation list and the role list, to prove that nothing was written.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from sleuth.demo.postgres import embedded_postgres
from sleuth.tools.sample.contracts import load_postgres
from tests.support.paths import ROOT

ROLE_SQL = ROOT / "docs" / "sql" / "readonly-role.sql"


@dataclass(frozen=True)
class Postgres:
    """DSNs of the test database: the owner's and the SELECT-only reader's."""

    owner_dsn: str
    reader_dsn: str


def _with_user(uri: str, user: str) -> str:
    # pgserver gives postgresql://postgres:@/postgres?host=/tmp/...
    scheme, rest = uri.split("://", 1)
    _, tail = rest.split("@", 1)
    return f"{scheme}://{user}@{tail}"


async def _prepare(owner_dsn: str) -> None:
    conn = await asyncpg.connect(owner_dsn)
    try:
        await load_postgres(conn)
        await conn.execute(ROLE_SQL.read_text(encoding="utf-8"))
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    # pgserver keeps a lock file in the user runtime dir, read when it is imported.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(tmp_path_factory.mktemp("xdg")))
    pytest.importorskip("pgserver")
    data = tmp_path_factory.mktemp("pgdata")
    with embedded_postgres(data, cleanup_mode="delete") as server:
        owner = server.get_uri()
        asyncio.run(_prepare(owner))
        yield Postgres(owner_dsn=owner, reader_dsn=_with_user(owner, "sleuth_reader"))


@pytest.fixture
async def reader_pool(postgres: Postgres) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(postgres.reader_dsn, min_size=0, max_size=2)
    assert pool is not None
    try:
        yield pool
    finally:
        await pool.close()


@pytest.fixture
async def owner_conn(postgres: Postgres) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(postgres.owner_dsn)
    try:
        yield conn
    finally:
        await conn.close()


async def table_checksums(conn: asyncpg.Connection) -> dict[str, str]:
    """md5 of every user table's rows, plus the list of relations and roles."""
    tables = await conn.fetch(
        "SELECT schemaname, tablename FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
    )
    sums: dict[str, str] = {}
    for row in tables:
        name = f'"{row["schemaname"]}"."{row["tablename"]}"'
        sums[name] = await conn.fetchval(
            f"SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {name} t"
        )
    sums["<relations>"] = await conn.fetchval(
        "SELECT md5(string_agg(c.oid::regclass::text || ':' || c.relkind::text, ',' "
        "ORDER BY c.oid)) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')"
    )
    sums["<roles>"] = await conn.fetchval(
        "SELECT md5(string_agg(rolname || rolsuper::text, ',' ORDER BY rolname)) FROM pg_roles"
    )
    return sums


Checksums = Callable[[asyncpg.Connection], Awaitable[dict[str, str]]]


@pytest.fixture(scope="session")
def checksums() -> Checksums:
    """:func:`table_checksums`, as a fixture."""
    return table_checksums


@pytest.fixture(scope="session")
def local_embedder() -> Any:
    """The real local model (all-MiniLM-L6-v2 in numpy), loaded once."""
    pytest.importorskip("tokenizers")
    from sleuth.core.embeddings import LocalEmbedder

    return LocalEmbedder()


SAMPLE_COLLECTION = "contracts"


@pytest.fixture(scope="session")
def sample_qdrant(tmp_path_factory: pytest.TempPathFactory, local_embedder: Any) -> Path:
    """A Qdrant local-mode folder holding the sample corpus, embedded by the real model."""
    from sleuth.tools.ingest import ingest, sample_documents
    from sleuth.tools.vector.store import QdrantLocation

    path = tmp_path_factory.mktemp("qdrant")

    async def _load() -> None:
        client = QdrantLocation(path=str(path)).client()
        try:
            await ingest(
                sample_documents(), client, local_embedder, SAMPLE_COLLECTION, progress=False
            )
        finally:
            await client.close()

    asyncio.run(_load())
    return path


@pytest.fixture(scope="session")
def sql_service(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``sleuth tool-service`` serving sql_query over the sample database, as the reader."""
    from tests.tools.service_process import ServiceProcess, sql_binding

    folder = tmp_path_factory.mktemp("sql-service")
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(sql_binding(), folder, env).wait_healthy()
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="session")
def vector_service(sample_qdrant: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``sleuth tool-service`` serving vector_search over a copy of the sample Qdrant folder."""
    import shutil

    from tests.tools.service_process import ServiceProcess, vector_binding

    folder = tmp_path_factory.mktemp("vector-service")
    qdrant = folder / "qdrant"
    shutil.copytree(sample_qdrant, qdrant)
    service = ServiceProcess(vector_binding(), folder, {"SLEUTH_QDRANT_PATH": str(qdrant)})
    service.wait_healthy()
    try:
        yield service
    finally:
        service.stop()
