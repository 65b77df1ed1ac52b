"""A client of the rerank API that vLLM and text-embeddings-inference serve.

Two wire formats (``vectorSearch.reranker.api``):

``cohere``  ``POST {endpoint}/v1/rerank`` with ``{"model", "query", "documents", "top_n"}``;
            the answer is ``{"results": [{"index", "relevance_score", ...}, ...], ...}``. This is
            the Cohere/Jina-compatible API vLLM serves for cross-encoder models.
``tei``     ``POST {endpoint}/rerank`` with ``{"query", "texts", "raw_scores": false,
            "truncate": true}``; the answer is ``[{"index", "score"}, ...]``
            (Hugging Face text-embeddings-inference).

:meth:`Reranker.scores` returns one score per document, in the documents' order. Any failure — a
timeout, a refused connection, an HTTP error, a body that is not that shape (an index out of
range, a document left without a score) — raises :class:`RerankFailed`, and the tool keeps its
retrieval order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import httpx


class RerankFailed(Exception):
    """The rerank server did not give a usable answer; the message says why."""


@dataclass(frozen=True)
class RerankerConfig:
    endpoint: str
    api: Literal["cohere", "tei"] = "cohere"
    model: str | None = None
    timeout_seconds: float = 2.0
    api_key: str | None = None


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RerankFailed(f"{what} is not a finite number: {value!r}")
    return float(value)


def _parse(api: str, body: Any, count: int) -> list[float]:
    if api == "cohere":
        if not isinstance(body, dict) or not isinstance(body.get("results"), list):
            raise RerankFailed("the answer has no results list")
        items, score_key = body["results"], "relevance_score"
    else:
        if not isinstance(body, list):
            raise RerankFailed("the answer is not a list of {index, score}")
        items, score_key = body, "score"
    scores: dict[int, float] = {}
    for item in items:
        if not isinstance(item, dict):
            raise RerankFailed("a result is not an object")
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise RerankFailed(f"result index {index!r} is not one of the {count} documents")
        scores[index] = _number(item.get(score_key), f"{score_key} of document {index}")
    if len(scores) != count:
        raise RerankFailed(f"{count - len(scores)} of {count} documents came back without a score")
    return [scores[i] for i in range(count)]


class Reranker:
    """Scores documents against a query through one rerank server (one HTTP client, reused)."""

    def __init__(self, config: RerankerConfig, client: httpx.AsyncClient | None = None) -> None:
        self.config = config
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        self._client = client or httpx.AsyncClient(headers=headers)
        self._owns_client = client is None

    def _request(self, query: str, documents: Sequence[str]) -> tuple[str, dict[str, Any]]:
        base = self.config.endpoint.rstrip("/")
        if self.config.api == "tei":
            body: dict[str, Any] = {
                "query": query,
                "texts": list(documents),
                "raw_scores": False,
                "truncate": True,
            }
            return f"{base}/rerank", body
        body = {"query": query, "documents": list(documents), "top_n": len(documents)}
        if self.config.model:
            body["model"] = self.config.model
        return f"{base}/v1/rerank", body

    async def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the order given."""
        if not documents:
            return []
        url, body = self._request(query, documents)
        try:
            response = await self._client.post(url, json=body, timeout=self.config.timeout_seconds)
        except httpx.TimeoutException:
            raise RerankFailed(f"no answer within {self.config.timeout_seconds:g} s") from None
        except httpx.HTTPError as err:
            raise RerankFailed(f"cannot reach {url}: {err}") from None
        if response.status_code != 200:
            raise RerankFailed(f"{url} answered HTTP {response.status_code}")
        try:
            payload = response.json()
        except ValueError:
            raise RerankFailed("the answer is not JSON") from None
        return _parse(self.config.api, payload, len(documents))

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
