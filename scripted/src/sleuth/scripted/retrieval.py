"""The scripted server's retrieval routes: embeddings (``POST /v1/embeddings``) and reranking
(``POST /rerank``, ``/v1/rerank``, ``/v2/rerank``), answered from the scenario's scripts."""

from __future__ import annotations

import asyncio
import hashlib
import math
import random
import uuid

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from sleuth.scripted.state import ScriptState
from sleuth.scripted.wire import error


def hash_vector(text: str, dimensions: int) -> list[float]:
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


async def embeddings(state: ScriptState, request: Request) -> Response:
    """``POST /v1/embeddings``: the scripted vectors, else hash-seeded unit vectors."""
    try:
        body = await request.json()
    except ValueError:
        return error(400, "request body is not valid JSON")
    raw = body.get("input") if isinstance(body, dict) else None
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return error(400, "input: a string or a list of strings is required", "input")
    script = state.scenario.embeddings
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": script.vectors.get(text) or hash_vector(text, script.dimensions),
        }
        for i, text in enumerate(texts)
    ]
    tokens = sum(max(1, len(t) // 4) for t in texts)
    return JSONResponse(
        {
            "object": "list",
            "data": data,
            "model": str(body.get("model") or state.scenario.model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
    )


async def rerank(state: ScriptState, request: Request) -> Response:
    """TEI's ``/rerank`` ({query, texts} → [{index, score}]) or the Cohere/Jina form vLLM
    serves ({model, query, documents, top_n} → {results: [{index, relevance_score}]})."""
    try:
        body = await request.json()
    except ValueError:
        return error(400, "request body is not valid JSON")
    cohere = request.url.path != "/rerank" or (isinstance(body, dict) and "documents" in body)
    field = "documents" if cohere else "texts"
    docs = body.get(field) if isinstance(body, dict) else None
    query = body.get("query") if isinstance(body, dict) else None
    if not isinstance(query, str) or not query:
        return error(400, "query: a non-empty string is required", "query")
    if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
        return error(400, f"{field}: a non-empty list of strings is required", field)
    with state.lock():
        state.rerank_requests.append({"path": request.url.path, **body})
    script = state.scenario.rerank
    await asyncio.sleep(script.delay_ms / 1000)
    if script.status >= 400:
        return error(script.status, "scripted rerank failure")
    scores = [script.score(query, d) for d in docs]
    order = sorted(range(len(docs)), key=lambda i: -scores[i])
    if script.malformed:
        order = [len(docs) + 5]
        scores.append(0.5)
        scores.extend([0.0] * 5)
    if not cohere:
        return JSONResponse([{"index": i, "score": scores[i]} for i in order])
    top_n = body.get("top_n")
    if isinstance(top_n, int) and top_n > 0:
        order = order[:top_n]
    tokens = sum(max(1, len(d) // 4) for d in docs) + len(query) // 4
    return JSONResponse(
        {
            "id": f"rerank-{uuid.uuid4().hex[:16]}",
            "model": str(body.get("model") or state.scenario.model),
            "usage": {"total_tokens": tokens},
            "results": [
                {
                    "index": i,
                    "document": {"text": docs[i]} if i < len(docs) else None,
                    "relevance_score": scores[i],
                }
                for i in order
            ],
        }
    )


__all__ = ["embeddings", "hash_vector", "rerank"]
