"""Embedders: an OpenAI-compatible ``/v1/embeddings`` endpoint, or the local MiniLM model.

In a cluster the tool service calls an embeddings server (vLLM, TEI, any OpenAI-compatible one);
on one machine it runs all-MiniLM-L6-v2 locally (`sleuth.core.minilm`). Both
return unit-length vectors, so Qdrant's cosine distance ranks them the same way.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import httpx

from sleuth.core.errors import SleuthError


class EmbeddingsUnavailable(SleuthError):
    """The embeddings endpoint is unreachable, failing or answered a wrong body."""

    retryable = True


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of a fixed size."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2 in this process (numpy); encoding runs in a worker thread."""

    def __init__(self, model_dir: str | None = None) -> None:
        # Lazy on purpose: numpy, tokenizers and threadpoolctl load only for the local model;
        # an endpoint's embedder, and `sleuth --help` through the demo, never pay for them.
        from sleuth.core.minilm import MODEL_NAME, MiniLM

        self._model = MiniLM(Path(model_dir) if model_dir else None)
        self._name = MODEL_NAME
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self._model.encode(list(texts))]

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        async with self._lock:  # one encode at a time: numpy already uses the cores
            return await asyncio.to_thread(self.embed_sync, texts)


def _normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    return vector if norm == 0 else [v / norm for v in vector]


class OpenAIEmbedder:
    """A client of an OpenAI-compatible embeddings API (``POST {base_url}/embeddings``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimension: int | None = None,
        api_key: str | None = None,
        timeout_seconds: float = 10.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._model = model
        self._dimension = dimension
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient(timeout=timeout_seconds, headers=headers)
        self._owns_client = client is None

    @property
    def name(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            raise RuntimeError("dimension unknown until the first call; call probe() first")
        return self._dimension

    async def probe(self) -> int:
        """Embed one word to learn the vector size."""
        await self.embed(["dimension probe"])
        return self.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        try:
            response = await self._client.post(
                self._url, json={"model": self._model, "input": list(texts)}
            )
        except httpx.HTTPError as err:
            raise EmbeddingsUnavailable(
                f"embeddings endpoint unreachable ({type(err).__name__})"
            ) from None
        if response.status_code >= 400:
            raise EmbeddingsUnavailable(f"embeddings endpoint answered {response.status_code}")
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        vectors = [_normalise([float(v) for v in item["embedding"]]) for item in data]
        if len(vectors) != len(texts):
            raise EmbeddingsUnavailable("embeddings endpoint returned a wrong count")
        self._dimension = len(vectors[0])
        return vectors

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
