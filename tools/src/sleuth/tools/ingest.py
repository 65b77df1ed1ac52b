"""``sleuth ingest``: read a folder of text/markdown, chunk, embed in batches, upsert to Qdrant.

Each file is a document. Its id is its path relative to the folder (or ``id:`` in an optional
YAML front matter block, whose other keys become filterable metadata); its title is its first
``# heading`` (or ``title:``). Chunks overlap (:mod:`sleuth.tools.vector.chunking`), are
embedded in batches with a progress bar, and upserted under ids derived from (document id,
chunk index): re-running does not duplicate anything, and chunks left over from a longer
earlier version of a document are deleted. Each chunk gets its dense embedding and its BM25-style
keyword vector (:mod:`sleuth.tools.vector.sparse`, computed here), so the collection serves
dense and hybrid retrieval. PDFs are not read (say so rather than guess).

``--binding`` reads the collection and the chunking (``vectorSearch.chunking``) from a
ToolBinding manifest (or a tool service's config file), so the passages are cut the way the
binding says; ``--chunk-size`` / ``--overlap`` override it.

Examples::

    sleuth ingest docs/ --collection contracts --qdrant-path ./qdrant-data
    sleuth ingest docs/ --collection contracts --qdrant-url http://qdrant:6333 \\
        --embeddings-url http://tei:8080/v1 --embeddings-model bge-m3
    sleuth ingest --sample --collection contracts --qdrant-path ./qdrant-data
    sleuth ingest docs/ --binding toolbinding.yaml --qdrant-path ./qdrant-data
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from qdrant_client import AsyncQdrantClient, models
from tqdm import tqdm

from sleuth.core.embeddings import Embedder, LocalEmbedder, OpenAIEmbedder
from sleuth.core.errors import ConfigError
from sleuth.tools.sample.documents import DOCUMENTS
from sleuth.tools.service.config import load_spec
from sleuth.tools.vector.chunking import ChunkSettings, chunk_text
from sleuth.tools.vector.sparse import encode_passage
from sleuth.tools.vector.store import (
    DENSE,
    SPARSE,
    QdrantLocation,
    ensure_collection,
    point_id,
)

TEXT_SUFFIXES = (".md", ".markdown", ".txt", ".rst")


@dataclass(frozen=True)
class Document:
    id: str
    source: str
    title: str
    text: str
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestReport:
    documents: int
    chunks: int
    skipped: tuple[str, ...]
    stale_deleted: int


def _front_matter(raw: str) -> tuple[dict[str, Any], str]:
    if not raw.startswith("---\n"):
        return {}, raw
    end = raw.find("\n---", 4)
    if end < 0:
        return {}, raw
    meta = yaml.safe_load(raw[4:end]) or {}
    if not isinstance(meta, dict):
        return {}, raw
    return meta, raw[end + 4 :].lstrip("\n")


def parse_document(relative: str, raw: str) -> Document:
    """A document from a file's text; front matter ``id``/``title`` override the defaults."""
    meta, body = _front_matter(raw)
    title = str(meta.pop("title", "") or "")
    if not title:
        for line in body.splitlines():
            if line.startswith("# "):
                title = line[2:].strip()
                break
    doc_id = str(meta.pop("id", "") or relative)
    source = str(meta.pop("source", "") or relative)
    metadata = {str(k): str(v) for k, v in meta.items()}
    return Document(
        id=doc_id, source=source, title=title or Path(relative).stem, text=body, metadata=metadata
    )


def read_folder(folder: Path) -> tuple[list[Document], list[str]]:
    """Documents under ``folder`` (sorted, so runs are reproducible) and the files skipped."""
    documents: list[Document] = []
    skipped: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder).as_posix()
        if path.suffix.lower() not in TEXT_SUFFIXES:
            skipped.append(relative)
            continue
        documents.append(parse_document(relative, path.read_text(encoding="utf-8")))
    return documents, skipped


def sample_documents() -> list[Document]:
    return [
        Document(id=d.id, source=d.source, title=d.title, text=d.text, metadata=dict(d.metadata))
        for d in DOCUMENTS
    ]


@dataclass(frozen=True)
class _Chunk:
    document: Document
    index: int
    text: str


def _chunks(documents: Iterable[Document], settings: ChunkSettings) -> list[_Chunk]:
    return [
        _Chunk(doc, i, text)
        for doc in documents
        for i, text in enumerate(chunk_text(doc.text, settings))
    ]


def _point(chunk: _Chunk, vector: list[float], settings: ChunkSettings) -> models.PointStruct:
    doc = chunk.document
    sparse = encode_passage(f"{doc.title}\n{chunk.text}")
    return models.PointStruct(
        id=point_id(doc.id, chunk.index),
        vector={
            DENSE: vector,
            SPARSE: models.SparseVector(indices=sparse.indices, values=sparse.values),
        },
        payload={
            "document_id": doc.id,
            "source": doc.source,
            "title": doc.title,
            "chunk_index": chunk.index,
            "text": chunk.text,
            "content_sha256": hashlib.sha256(chunk.text.encode()).hexdigest(),
            "metadata": doc.metadata,
            "chunking": {"size": settings.size, "overlap": settings.overlap},
        },
    )


async def _delete_stale(client: AsyncQdrantClient, collection: str, counts: dict[str, int]) -> int:
    deleted = 0
    for doc_id, count in counts.items():
        stale = models.Filter(
            must=[
                models.FieldCondition(key="document_id", match=models.MatchValue(value=doc_id)),
                models.FieldCondition(key="chunk_index", range=models.Range(gte=count)),
            ]
        )
        found = await client.count(collection, count_filter=stale, exact=True)
        if found.count:
            await client.delete(collection, points_selector=models.FilterSelector(filter=stale))
            deleted += found.count
    return deleted


async def ingest(
    documents: Sequence[Document],
    client: AsyncQdrantClient,
    embedder: Embedder,
    collection: str,
    *,
    settings: ChunkSettings | None = None,
    batch_size: int = 32,
    recreate: bool = False,
    progress: bool = True,
) -> IngestReport:
    """Chunk, embed and upsert ``documents``; idempotent for unchanged input."""
    settings = settings or ChunkSettings()
    chunks = _chunks(documents, settings)
    await ensure_collection(client, collection, embedder.dimension, recreate=recreate)
    with tqdm(total=len(chunks), unit="chunk", disable=not progress, file=sys.stderr) as bar:
        for start in range(0, len(chunks), batch_size):
            batch = chunks[start : start + batch_size]
            vectors = await embedder.embed([c.text for c in batch])
            points = [_point(c, v, settings) for c, v in zip(batch, vectors, strict=True)]
            await client.upsert(collection, points=points, wait=True)
            bar.update(len(batch))
    counts: dict[str, int] = {doc.id: 0 for doc in documents}
    for chunk in chunks:
        counts[chunk.document.id] = max(counts[chunk.document.id], chunk.index + 1)
    stale = await _delete_stale(client, collection, counts)
    return IngestReport(
        documents=len(documents), chunks=len(chunks), skipped=(), stale_deleted=stale
    )


def make_embedder(url: str | None, model: str | None) -> Embedder:
    """The endpoint's embedder when ``url`` is given, else the local MiniLM model."""
    if url:
        return OpenAIEmbedder(
            url, model or "default", api_key=os.environ.get("SLEUTH_EMBEDDINGS_API_KEY")
        )
    return LocalEmbedder()


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="chunk, embed and upsert a folder of text/markdown into Qdrant",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("folder", nargs="?", type=Path, help="folder of .md/.txt files")
    parser.add_argument("--sample", action="store_true", help="ingest the built-in sample corpus")
    parser.add_argument(
        "--binding",
        type=Path,
        help="ToolBinding manifest (or tool service config) of type vector_search: its "
        "collection and vectorSearch.chunking",
    )
    parser.add_argument("--collection", help="Qdrant collection name (default: the binding's)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--qdrant-url", help="Qdrant URL, e.g. http://qdrant:6333")
    where.add_argument("--qdrant-path", help="folder of a Qdrant local-mode store")
    parser.add_argument("--embeddings-url", help="OpenAI-compatible base URL (ends in /v1)")
    parser.add_argument("--embeddings-model", help="model name sent to the embeddings endpoint")
    parser.add_argument(
        "--chunk-size", type=int, help="characters (default: the binding's, else 800)"
    )
    parser.add_argument("--overlap", type=int, help="characters (default: the binding's, else 150)")
    parser.add_argument("--batch-size", type=int, default=32, help="chunks per embedding call")
    parser.add_argument("--recreate", action="store_true", help="drop the collection first")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)


async def _run(args: argparse.Namespace) -> int:
    if args.sample == (args.folder is not None):
        print("error: give a FOLDER or --sample (not both)", file=sys.stderr)
        return 2
    if args.folder is not None and not args.folder.is_dir():
        print(f"error: folder {args.folder} does not exist", file=sys.stderr)
        return 2
    settings, collection = _settings(args)
    args.collection = collection
    skipped: list[str] = []
    if args.sample:
        documents = sample_documents()
    else:
        documents, skipped = read_folder(args.folder)
    embedder = make_embedder(args.embeddings_url, args.embeddings_model)
    if isinstance(embedder, OpenAIEmbedder):
        await embedder.probe()
    location = QdrantLocation(
        url=args.qdrant_url, path=args.qdrant_path, api_key=os.environ.get("SLEUTH_QDRANT_API_KEY")
    )
    client = location.client()
    try:
        report = await ingest(
            documents,
            client,
            embedder,
            args.collection,
            settings=settings,
            batch_size=args.batch_size,
            recreate=args.recreate,
            progress=not args.quiet,
        )
    finally:
        await client.close()
    for name in skipped:
        print(f"skipped (not text/markdown): {name}", file=sys.stderr)
    print(
        f"ingested {report.documents} documents as {report.chunks} chunks into "
        f"{args.collection} at {location.describe()}; {report.stale_deleted} stale chunks removed"
    )
    return 0


def _settings(args: argparse.Namespace) -> tuple[ChunkSettings, str]:
    """Chunking and collection: the flags, else the binding's, else the defaults."""
    size, overlap, collection = 800, 150, args.collection
    if args.binding is not None:
        spec = load_spec(args.binding, "vector_search")
        if spec.vector_search is None:
            raise ValueError(f"{args.binding}: not a vector_search ToolBinding")
        collection = collection or spec.vector_search.collection
        if spec.vector_search.chunking is not None:
            size = spec.vector_search.chunking.size
            overlap = spec.vector_search.chunking.overlap
    if not collection:
        raise ValueError("give --collection or --binding")
    size = args.chunk_size if args.chunk_size is not None else size
    overlap = args.overlap if args.overlap is not None else overlap
    return ChunkSettings(size=size, overlap=overlap), collection


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except (ValueError, ConfigError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
