"""In-process tools built by the agent registry's default builder, from the environment."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.api.agent_config import ToolConfig
from sleuth.tools.base import ToolMisconfigured
from sleuth.tools.local import build_local_tool
from sleuth.tools.sample.contracts import SEED_PARAMS, SEED_SQL

pytestmark = pytest.mark.integration


async def test_local_sql_tool_from_env(postgres: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLEUTH_SQL_CONNECTION_URI", postgres.reader_dsn)
    monkeypatch.setenv("SLEUTH_SQL_ALLOWED_TABLES", "contracts")
    tool = build_local_tool(ToolConfig(name="sql_query", type="sql_query"))
    assert tool.spec.description.endswith("Allowed tables: contracts.")
    out = await tool.call({"query": SEED_SQL, "params": list(SEED_PARAMS)})
    assert out.content["rows"][0]["num_contracts"] == 47


async def test_local_sql_tool_without_dsn_is_misconfigured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SLEUTH_SQL_CONNECTION_URI", raising=False)
    monkeypatch.setenv("SLEUTH_SQL_ALLOWED_TABLES", "contracts")
    tool = build_local_tool(ToolConfig(name="sql_query", type="sql_query"))
    with pytest.raises(ToolMisconfigured, match="SLEUTH_SQL_CONNECTION_URI is not set"):
        await tool.call({"query": "SELECT 1"})


async def test_local_vector_tool_from_env(
    sample_qdrant: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "qdrant"
    shutil.copytree(sample_qdrant, copy)
    monkeypatch.setenv("SLEUTH_QDRANT_PATH", str(copy))
    monkeypatch.setenv("SLEUTH_QDRANT_COLLECTION", "contracts")
    tool = build_local_tool(ToolConfig(name="vector_search", type="vector_search"))
    out = await tool.call({"query": "price revision linked to inflation", "top_k": 1})
    assert out.content["results"][0]["document_id"] == "contract-provider-c-2025"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda folder: folder / "missing", "does not exist"),
        (lambda folder: (folder / "file").write_text("x") and folder / "file", "is not a folder"),
        (lambda folder: folder, "holds no Qdrant store"),
    ],
)
async def test_a_bad_qdrant_path_names_the_setting_not_the_path(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    make: Any,
    problem: str,
) -> None:
    """The tool's message reaches the model, the trace and the client: the setting and the
    problem, never the server's storage path, which goes to the log (issue 34)."""
    path = make(tmp_path)
    monkeypatch.setenv("SLEUTH_QDRANT_PATH", str(path))
    tool = build_local_tool(ToolConfig(name="vector_search", type="vector_search"))
    with pytest.raises(ToolMisconfigured) as err:
        await tool.call({"query": "late-delivery penalty"})
    message = str(err.value)
    assert message.startswith(f"the vector_search tool is unavailable: SLEUTH_QDRANT_PATH: the "
                              f"Qdrant local store {problem}")  # fmt: skip
    assert str(tmp_path) not in message
    assert str(path) in caplog.text  # the operator still learns which path
