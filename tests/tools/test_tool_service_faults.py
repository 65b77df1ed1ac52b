"""Fault injection against ``sleuth tool-service``, from outside: real processes, a real
PostgreSQL (pgserver), Qdrant's local mode on disk.

Asserts on what a caller sees (status, error kind, message, exit code and log line) and on what
PostgreSQL sees (``pg_stat_activity``: an abandoned call's statement is gone; a refused call never
ran one).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from sleuth.core.process import free_port
from sleuth.core.tools import SQL_QUERY
from sleuth.tools.base import ToolUnavailable
from sleuth.tools.remote import RemoteTool, Transport
from sleuth.tools.sample.contracts import load_postgres
from tests.support.polling import eventually
from tests.tools.conftest import Postgres
from tests.tools.service_process import ServiceProcess, sql_binding, vector_binding

pytestmark = pytest.mark.integration

TRIVIAL = {"query": "SELECT count(*) AS n FROM contracts"}


def _slow(marker: int) -> dict[str, Any]:
    """A query the guard accepts that runs for minutes; ``marker`` tells its statements apart."""
    return {"query": f"SELECT count(*) AS n FROM generate_series(1, {marker}) g"}


def _active(owner_dsn: str, marker: int) -> int:
    """How many statements of the reader role holding ``marker`` PostgreSQL is running."""

    async def count() -> int:
        conn = await asyncpg.connect(owner_dsn)
        try:
            value = await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE usename = 'sleuth_reader' "
                "AND state = 'active' AND query LIKE $1",
                f"%generate_series(1, {marker})%",
            )
            return int(value)
        finally:
            await conn.close()

    return asyncio.run(count())


def _call(service: ServiceProcess, arguments: dict[str, Any], **kw: Any) -> httpx.Response:
    url = f"{service.url}/v1/tools/sql_query/call"
    return httpx.post(url, json={"arguments": arguments}, timeout=kw.pop("timeout", 60), **kw)


def _open_call(service: ServiceProcess, arguments: dict[str, Any]) -> socket.socket:
    """A call sent on a raw socket, left waiting: closing the socket abandons it."""
    payload = json.dumps({"arguments": arguments}).encode()
    sock = socket.create_connection(("127.0.0.1", service.port), timeout=10)
    sock.sendall(
        b"POST /v1/tools/sql_query/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    return sock


@pytest.fixture
def slow_sql(postgres: Postgres, tmp_path: Path) -> Iterator[ServiceProcess]:
    """A SQL tool service with a small pool and a statement timeout far beyond the tests."""
    binding = sql_binding(poolSize=2, acquireTimeoutSeconds=1, statementTimeoutSeconds=300)
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(binding, tmp_path, env).wait_healthy()
    try:
        yield service
    finally:
        service.stop()


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert {"message", "type", "field", "kind", "tool"} <= set(error), error
    return error


# --- 4. abandoned SQL, pool exhaustion --------------------------------------------------------


@pytest.mark.parametrize("transport", ["mcp", "json"])
def test_an_abandoned_call_cancels_its_statement(
    slow_sql: ServiceProcess, postgres: Postgres, transport: str
) -> None:
    mode: Transport = "mcp" if transport == "mcp" else "json"
    markers = [2_000_000_001 + i + (10 if transport == "json" else 0) for i in range(4)]

    async def abandon() -> None:  # the agent's tool timeout, twice the pool size over
        tool = RemoteTool(slow_sql.url, SQL_QUERY, transport=mode, timeout_seconds=2)
        results = await asyncio.gather(
            *(tool.call(_slow(m)) for m in markers), return_exceptions=True
        )
        assert all(isinstance(r, ToolUnavailable) for r in results), results

    asyncio.run(abandon())
    eventually(
        lambda: sum(_active(postgres.owner_dsn, m) for m in markers) == 0,
        timeout=30,
        what="the abandoned statements cancelled on the server",
    )
    answer = _call(slow_sql, TRIVIAL)
    assert answer.status_code == 200, answer.text
    assert answer.json()["content"]["rows"] == [{"n": 95}]


def test_an_exhausted_pool_is_busy_not_a_timeout(postgres: Postgres, tmp_path: Path) -> None:
    binding = sql_binding(poolSize=1, acquireTimeoutSeconds=1, statementTimeoutSeconds=300)
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(binding, tmp_path, env).wait_healthy()
    marker = 2_000_000_101
    holder = _open_call(service, _slow(marker))
    try:
        eventually(lambda: _active(postgres.owner_dsn, marker) == 1, 30, "the slow statement")
        busy = _call(service, TRIVIAL)
        error = _error(busy, 503)
        assert error["kind"] == "busy"
        assert busy.headers["retry-after"] == "1"
        assert "all 1 database connections are in use" in error["message"]
        assert "sqlQuery.poolSize" in error["message"]
        metrics = httpx.get(f"{service.url}/metrics").text
        assert 'outcome="busy"' in metrics
    finally:
        holder.close()
    try:
        eventually(lambda: _active(postgres.owner_dsn, marker) == 0, 30, "the holder cancelled")
        assert _call(service, TRIVIAL).status_code == 200
    finally:
        service.stop()


def test_calls_beyond_the_execution_limit_are_refused_at_once(
    postgres: Postgres, tmp_path: Path
) -> None:
    binding = {**sql_binding(poolSize=2, statementTimeoutSeconds=300), "maxConcurrentCalls": 1}
    env = {"SLEUTH_SQL_CONNECTION_URI": postgres.reader_dsn}
    service = ServiceProcess(binding, tmp_path, env).wait_healthy()
    marker = 2_000_000_201
    holder = _open_call(service, _slow(marker))
    try:
        eventually(lambda: _active(postgres.owner_dsn, marker) == 1, 30, "the slow statement")
        error = _error(_call(service, TRIVIAL), 503)
        assert error["kind"] == "busy"
        assert "maxConcurrentCalls" in error["message"]
        joined = _open_call(service, _slow(marker))  # the same call joins the running one
        try:
            eventually(
                lambda: 'outcome="busy"' in httpx.get(f"{service.url}/metrics").text,
                30,
                "busy counted",
            )
            assert _active(postgres.owner_dsn, marker) == 1
        finally:
            joined.close()
    finally:
        holder.close()
    try:
        eventually(lambda: _active(postgres.owner_dsn, marker) == 0, 30, "both callers gone")
        assert _call(service, TRIVIAL).status_code == 200
    finally:
        service.stop()


def test_a_refused_query_never_reaches_postgresql(
    slow_sql: ServiceProcess, postgres: Postgres
) -> None:
    assert _call(slow_sql, TRIVIAL).status_code == 200  # a pooled connection exists
    attacks = [
        "DROP TABLE contracts /* attack-1 */",
        "SELECT * FROM payroll /* attack-2 */",
        "SELECT 1; DELETE FROM contracts /* attack-3 */",
    ]
    for attack in attacks:
        assert _error(_call(slow_sql, {"query": attack}), 422)["kind"] == "argument"

    async def seen() -> list[str]:
        conn = await asyncpg.connect(postgres.owner_dsn)
        try:
            rows = await conn.fetch(
                "SELECT query FROM pg_stat_activity WHERE usename = 'sleuth_reader'"
            )
            return [str(r["query"]) for r in rows]
        finally:
            await conn.close()

    queries = asyncio.run(seen())  # each connection's last statement
    assert queries, "the reader's pooled connection is visible"
    assert not [q for q in queries if "attack-" in q]


# --- 5. single flight in the tool service -----------------------------------------------------


def test_identical_concurrent_calls_share_one_execution(slow_sql: ServiceProcess) -> None:
    arguments = {"query": "SELECT count(*) AS n FROM generate_series(1, 20000000) g"}

    async def stampede() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=120) as client:
            url = f"{slow_sql.url}/v1/tools/sql_query/call"
            return list(
                await asyncio.gather(
                    *(client.post(url, json={"arguments": arguments}) for _ in range(24))
                )
            )

    responses = asyncio.run(stampede())
    assert [r.status_code for r in responses] == [200] * 24
    assert {json.dumps(r.json()["content"]) for r in responses} == {
        json.dumps(responses[0].json()["content"])
    }
    text = httpx.get(f"{slow_sql.url}/metrics").text
    ok = 'sleuth_tool_service_calls_total{outcome="ok",tool="sql_query",transport="json"} 1.0'
    shared = 'sleuth_tool_service_calls_total{outcome="shared",tool="sql_query",transport="json"}'
    assert ok in text
    assert f"{shared} 23.0" in text


# --- 7. configuration and connection errors are their own kinds ------------------------------


@pytest.fixture(scope="module")
def password_server(
    postgres: Postgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Postgres]:
    """A PostgreSQL of its own whose role ``sleuth_pw`` must give its password (scram).

    pg_hba.conf is edited while the server is stopped and read when it starts again: a
    reload is not enough here (the server runs as pgserver's own user, which cannot always
    reopen its files under pytest's private temporary folders)."""
    from sleuth.demo.postgres import embedded_postgres

    data = tmp_path_factory.mktemp("pgdata-password")

    async def setup(owner: str) -> str:
        conn = await asyncpg.connect(owner)
        try:
            await load_postgres(conn)
            await conn.execute(
                "CREATE ROLE sleuth_pw LOGIN PASSWORD 'right-pw'; "
                "GRANT SELECT ON contracts TO sleuth_pw"
            )
            return str(await conn.fetchval("SHOW hba_file"))
        finally:
            await conn.close()

    with embedded_postgres(data, cleanup_mode="stop") as server:
        hba = Path(asyncio.run(setup(server.get_uri())))
    hba.write_text("local all sleuth_pw scram-sha-256\n" + hba.read_text(encoding="utf-8"))
    with embedded_postgres(data, cleanup_mode="delete") as server:
        owner = server.get_uri()
        yield Postgres(owner_dsn=owner, reader_dsn=owner)


def _dsn_for(postgres: Postgres, password: str, user: str = "sleuth_pw") -> str:
    scheme, rest = postgres.owner_dsn.split("://", 1)
    _, tail = rest.split("@", 1)
    return f"{scheme}://{user}:{password}@{tail}"


@pytest.mark.parametrize("case", ["password", "database"])
def test_refused_credentials_are_a_configuration_error(
    password_server: Postgres, tmp_path: Path, case: str
) -> None:
    dsn = _dsn_for(password_server, "wrong-pw-7f3a")
    if case == "database":
        dsn = _dsn_for(password_server, "right-pw").replace("/postgres?", "/nowhere?")
    service = ServiceProcess(sql_binding(), tmp_path, {"SLEUTH_SQL_CONNECTION_URI": dsn})
    service.wait_healthy()
    try:
        assert httpx.get(f"{service.url}/readyz", timeout=10).status_code == 503
        error = _error(_call(service, TRIVIAL), 503)
        assert error["kind"] == "misconfigured"
        assert "an operator must fix" in error["message"]
        assert "refused the query" not in error["message"]
    finally:
        service.stop()
    log = service.log.read_text()
    assert "wrong-pw-7f3a" not in log
    assert "right-pw" not in log
    right = _dsn_for(password_server, "right-pw")
    service = ServiceProcess(sql_binding(), tmp_path, {"SLEUTH_SQL_CONNECTION_URI": right})
    service.wait_healthy()
    try:  # the same role with its password works: the error was the credentials
        assert _call(service, TRIVIAL).status_code == 200
    finally:
        service.stop()


@pytest.mark.parametrize(
    ("option", "sqlstate"),
    [("fallback_search=on", "42704"), ("statement_timeout=soon", "22023")],
)
def test_an_option_the_database_refuses_is_a_configuration_error(
    postgres: Postgres, tmp_path: Path, option: str, sqlstate: str
) -> None:
    """asyncpg sends an unknown URI option to PostgreSQL as a setting, which refuses the
    connection: the tool's configuration is wrong, not the model's query (issue 34)."""
    separator = "&" if "?" in postgres.reader_dsn else "?"
    dsn = f"{postgres.reader_dsn}{separator}{option}"
    service = ServiceProcess(sql_binding(), tmp_path, {"SLEUTH_SQL_CONNECTION_URI": dsn})
    service.wait_healthy()
    try:
        assert httpx.get(f"{service.url}/readyz", timeout=10).status_code == 503
        error = _error(_call(service, TRIVIAL), 503)
    finally:
        service.stop()
    assert error["kind"] == "misconfigured"
    assert "refused its connection settings" in error["message"]
    assert f"SQLSTATE {sqlstate}" in error["message"]
    assert "an operator must fix SLEUTH_SQL_CONNECTION_URI" in error["message"]
    assert "refused the query" not in error["message"]


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://reader:hunter2-secret@127.0.0.1:not-a-port/contracts",
        "postgresql://reader:hunter2-secret@[::1/contracts",
        "postgresql://reader:hunter2-secret@db/contracts?sslmode=sometimes",
    ],
)
def test_an_unusable_dsn_stops_the_service_in_one_line(tmp_path: Path, dsn: str) -> None:
    service = ServiceProcess(sql_binding(), tmp_path, {"SLEUTH_SQL_CONNECTION_URI": dsn})
    assert service.process.wait(timeout=60) == 2
    log = service.log.read_text()
    assert log.startswith("error: SLEUTH_SQL_CONNECTION_URI cannot be used"), log
    assert len(log.strip().splitlines()) == 1, log
    assert "hunter2-secret" not in log


def test_a_lost_database_names_no_address(tmp_path: Path) -> None:
    port = free_port()
    env = {"SLEUTH_SQL_CONNECTION_URI": f"postgresql://nobody@127.0.0.1:{port}/x"}
    service = ServiceProcess(sql_binding(), tmp_path, env).wait_healthy()
    try:
        error = _error(_call(service, TRIVIAL), 503)
    finally:
        service.stop()
    assert error["kind"] == "unavailable"
    assert str(port) not in error["message"]
    assert "127.0.0.1" not in error["message"]


async def test_an_unreachable_tool_service_names_no_address() -> None:
    port = free_port()
    with pytest.raises(ToolUnavailable) as info:
        await RemoteTool(f"http://127.0.0.1:{port}", SQL_QUERY, timeout_seconds=5).call(TRIVIAL)
    assert "127.0.0.1" not in str(info.value)
    assert str(port) not in str(info.value)


# --- 10. Qdrant paths ---------------------------------------------------------------------------


def _vector_service(tmp_path: Path, path: Path) -> ServiceProcess:
    return ServiceProcess(vector_binding(), tmp_path, {"SLEUTH_QDRANT_PATH": str(path)})


def _one_line_error(service: ServiceProcess, *expected: str) -> str:
    assert service.process.wait(timeout=120) == 2
    log = service.log.read_text()
    assert log.startswith("error: SLEUTH_QDRANT_PATH: "), log
    assert len(log.strip().splitlines()) == 1, log
    for text in expected:
        assert text in log, log
    return log


def test_a_missing_qdrant_path_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "no-store"
    _one_line_error(_vector_service(tmp_path, missing), "does not exist", "sleuth ingest")
    assert not missing.exists()


def test_a_qdrant_path_that_is_a_file(tmp_path: Path) -> None:
    file = tmp_path / "store"
    file.write_text("not a store")
    _one_line_error(_vector_service(tmp_path, file), "is not a folder")


def test_a_qdrant_path_locked_by_another_process(sample_qdrant: Path, tmp_path: Path) -> None:
    store = tmp_path / "qdrant"
    shutil.copytree(sample_qdrant, store)
    first = _vector_service(tmp_path, store).wait_healthy()
    try:
        _one_line_error(_vector_service(tmp_path, store), "open in another process")
        assert httpx.get(f"{first.url}/readyz", timeout=10).status_code == 200
    finally:
        first.stop()


def test_a_corrupt_qdrant_store(sample_qdrant: Path, tmp_path: Path) -> None:
    store = tmp_path / "qdrant"
    shutil.copytree(sample_qdrant, store)
    for sqlite in store.rglob("storage.sqlite"):
        sqlite.write_bytes(b"garbage\x00\xff" * 100)
    _one_line_error(_vector_service(tmp_path, store), "cannot be opened as a Qdrant store")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_qdrant_path(sample_qdrant: Path, tmp_path: Path) -> None:
    store = tmp_path / "qdrant"
    shutil.copytree(sample_qdrant, store)
    store.chmod(0)
    try:
        _one_line_error(_vector_service(tmp_path, store), "not readable")
    finally:
        store.chmod(0o755)
