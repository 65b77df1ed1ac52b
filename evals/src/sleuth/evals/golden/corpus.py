"""Corpus chunks for the golden builder: from a folder of text files, a JSONL file, or Qdrant.

A chunk has an id, its text and the metadata stratified sampling uses (source, section, date).
Folder files (``.md``, ``.txt``) are cut at headings and blank lines into chunks of at most
``max_chars``; a chunk's id is ``<relative path>#<n>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sleuth.core.errors import DatasetError
from sleuth.core.jsonl import load_jsonl

_DATE = re.compile(r"\b(19|20)\d{2}-\d{2}-\d{2}\b")


class Chunk(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    text: str = Field(min_length=1)
    source: str = ""
    section: str = ""
    date: str = ""


@dataclass(frozen=True)
class FolderOptions:
    max_chars: int = 1200
    min_chars: int = 80


def _split_text(text: str, opts: FolderOptions) -> list[tuple[str, str]]:
    """(section heading, chunk text) pairs."""
    out: list[tuple[str, str]] = []
    section, buf = "", ""
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        if block.startswith("#"):
            if len(buf) >= opts.min_chars:
                out.append((section, buf))
                buf = ""
            section = block.splitlines()[0].lstrip("#").strip()
            rest = "\n".join(block.splitlines()[1:]).strip()
            block = rest
            if not block:
                continue
        if buf and len(buf) + len(block) + 2 > opts.max_chars:
            out.append((section, buf))
            buf = ""
        buf = f"{buf}\n\n{block}" if buf else block
    if buf.strip():
        out.append((section, buf))
    return [(s, t[: opts.max_chars]) for s, t in out if len(t) >= opts.min_chars]


def load_folder(root: Path | str, opts: FolderOptions | None = None) -> list[Chunk]:
    opts = opts or FolderOptions()
    base = Path(root)
    if not base.is_dir():
        raise DatasetError("not a folder", path=str(base))
    chunks: list[Chunk] = []
    for path in sorted(p for p in base.rglob("*") if p.suffix in {".md", ".txt"}):
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(base).as_posix()
        m = _DATE.search(text[:500])
        for n, (section, body) in enumerate(_split_text(text, opts)):
            chunks.append(
                Chunk(
                    id=f"{rel}#{n}",
                    text=body,
                    source=rel,
                    section=section,
                    date=m.group(0) if m else "",
                )
            )
    return chunks


def load_chunks_jsonl(path: Path | str) -> list[Chunk]:
    return load_jsonl(path, Chunk)


def _chunk_from_payload(point_id: Any, payload: dict[str, Any], text_key: str) -> Chunk | None:
    """A chunk from a point written by ``sleuth ingest`` (see sleuth.tools.vector.store):
    ``document_id``, ``chunk_index``, ``source``, ``title``, ``text``, ``metadata``."""
    text = str(payload.get(text_key) or "")
    if not text:
        return None
    doc = payload.get("document_id")
    index = payload.get("chunk_index")
    cid = f"{doc}#{index}" if doc is not None and index is not None else str(doc or point_id)
    raw_meta = payload.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    return Chunk(
        id=cid,
        text=text,
        source=str(payload.get("source") or doc or ""),
        section=str(payload.get("section") or payload.get("title") or ""),
        date=str(payload.get("date") or meta.get("date") or meta.get("year") or ""),
    )


def load_qdrant(
    location: str, collection: str, text_key: str = "text", limit: int = 10_000
) -> list[Chunk]:
    """Chunks from a Qdrant collection (``location``: a URL, or a local-mode folder)."""
    from qdrant_client import QdrantClient

    client = (
        QdrantClient(url=location)
        if location.startswith(("http://", "https://"))
        else QdrantClient(path=location)
    )
    out: list[Chunk] = []
    offset: Any = None
    try:
        while len(out) < limit:
            points, offset = client.scroll(
                collection, limit=256, offset=offset, with_payload=True, with_vectors=False
            )
            for p in points:
                chunk = _chunk_from_payload(p.id, dict(p.payload or {}), text_key)
                if chunk is not None:
                    out.append(chunk)
            if offset is None:
                break
    finally:
        client.close()
    return sorted(out[:limit], key=lambda c: c.id)
