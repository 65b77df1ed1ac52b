"""``sleuth ingest`` as a real process against Qdrant's local mode: idempotent re-runs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.tools.vector.store import QdrantLocation

pytestmark = pytest.mark.integration


def _ingest(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleuth.core.cli", "ingest", *args, "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _count(path: Path) -> int:
    async def count() -> int:
        client = QdrantLocation(path=str(path)).client()
        try:
            return (await client.count("notes", exact=True)).count
        finally:
            await client.close()

    return asyncio.run(count())


def test_ingest_folder_twice_does_not_duplicate(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.md").write_text("# Late delivery\n\nA penalty of 2% per month applies.\n")
    (docs / "sub" / "b.txt").write_text("Prices follow the CPI, capped at 4% per year.\n")
    (docs / "scan.pdf").write_bytes(b"%PDF-1.4")
    store = tmp_path / "qdrant"
    args = (str(docs), "--collection", "notes", "--qdrant-path", str(store))
    first = _ingest(*args)
    assert first.returncode == 0, first.stderr
    assert "ingested 2 documents as 2 chunks into notes at local:" in first.stdout
    assert "skipped (not text/markdown): scan.pdf" in first.stderr
    second = _ingest(*args)
    assert second.returncode == 0, second.stderr
    assert _count(store) == 2


def test_ingest_needs_a_folder_or_sample(tmp_path: Path) -> None:
    done = _ingest("--collection", "notes", "--qdrant-path", str(tmp_path / "q"))
    assert done.returncode == 2
    assert "give a FOLDER or --sample" in done.stderr
