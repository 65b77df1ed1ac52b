"""A lean ragas judge: JSON-mode chat completions through the one model client, validated with
pydantic; and ragas embeddings from an OpenAI-compatible ``/embeddings`` endpoint over httpx.

ragas' collections metrics only need ``agenerate(prompt, ResponseModel)``. :class:`DirectJudge`
sends the ragas prompt as the user message and the response model's JSON Schema in the system
message through a :class:`~sleuth.core.llm.ChatModel` built in JSON mode (``response_format:
{"type": "json_object"}``, the request shape of ragas' ``llm_factory`` path), then validates the
reply with the response model. On unparsable output it re-asks once, showing the model its reply
and the validation error. It spends a fraction of the CPU per call of the Instructor + OpenAI SDK
path (measured in bench/eval_runner.py), which matters when one machine drives a judge at high
concurrency. The model client's errors become :class:`JudgeError` reasons (:func:`judge_error`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import InstructorBaseRagasLLM

from sleuth.core.errors import ModelError, ModelResponseError, ModelTimeout
from sleuth.core.llm import ChatModel
from sleuth.scoring.errors import JudgeError

T = TypeVar("T", bound=BaseModel)

SYSTEM_PROMPT = (
    "You are an evaluation judge. Reply with one JSON object only, no prose and no code "
    "fences, that validates against this JSON Schema (an instance, not the schema itself):\n"
    "{schema}"
)
REASK_PROMPT = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the corrected JSON object for the same task."
)


@lru_cache(maxsize=64)
def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), ensure_ascii=False)


def extract_json(text: str) -> str:
    """The JSON object in ``text``: code fences and surrounding prose removed."""
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else text


def judge_error(exc: ModelError) -> JudgeError:
    """The judge's reason for a failed model call: timeout, connection, http_<status> or
    bad_response."""
    if isinstance(exc, ModelTimeout):
        return JudgeError("timeout", str(exc))
    if exc.status is not None:
        return JudgeError(f"http_{exc.status}", str(exc))
    if isinstance(exc, ModelResponseError):
        return JudgeError("bad_response", str(exc))
    return JudgeError("connection", str(exc))


class DirectJudge(InstructorBaseRagasLLM):
    """``agenerate`` for ragas metrics over a JSON-mode :class:`~sleuth.core.llm.ChatModel`.

    ``max_tokens`` is the model's budget, named when a verdict is cut at it.
    """

    def __init__(self, model: ChatModel, *, max_tokens: int, parse_retries: int = 1) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.parse_retries = parse_retries
        self.calls = 0

    def generate(self, prompt: str, response_model: type[T]) -> T:
        raise TypeError("DirectJudge is async only: use agenerate()")

    async def agenerate(self, prompt: str, response_model: type[T]) -> T:
        self.calls += 1
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT.format(schema=schema_text(response_model))},
            {"role": "user", "content": prompt},
        ]
        error = ""
        for _attempt in range(1 + self.parse_retries):
            try:
                turn = await self.model.complete(messages, [])
            except ModelError as exc:
                raise judge_error(exc) from exc
            content = turn.content or ""
            if turn.finish_reason == "length":
                raise JudgeError(
                    "truncated", f"output hit max_tokens={self.max_tokens}; raise the budget"
                )
            try:
                return response_model.model_validate_json(extract_json(content))
            except ValidationError as exc:
                error = (
                    str(exc).splitlines()[0]
                    + ": "
                    + "; ".join(
                        f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                        for e in exc.errors()[:3]
                    )
                )
            messages = [
                *messages,
                {"role": "assistant", "content": content},
                {"role": "user", "content": REASK_PROMPT.format(error=error)},
            ]
        raise JudgeError("unparsable", f"after {1 + self.parse_retries} attempts: {error}")


class DirectEmbeddings(BaseRagasEmbedding):
    """ragas embeddings from an OpenAI-compatible ``/embeddings`` endpoint over httpx."""

    def __init__(
        self, http: httpx.AsyncClient, base_url: str, model: str, *, api_key: str = "sk-local"
    ) -> None:
        super().__init__()
        self.http = http
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.headers = {"Authorization": f"Bearer {api_key}"}

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        raise TypeError("DirectEmbeddings is async only")

    async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
        return (await self.aembed_texts([text]))[0]

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
        body = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        try:
            resp = await self.http.post(self.url, json=body, headers=self.headers)
        except httpx.TimeoutException as exc:
            raise JudgeError(
                "timeout", f"embeddings: no answer within the timeout ({exc!r})"
            ) from exc
        except httpx.TransportError as exc:
            raise JudgeError("connection", f"embeddings: {exc or repr(exc)}") from exc
        if resp.status_code >= 400:
            raise JudgeError(f"http_{resp.status_code}", "embeddings: " + resp.text[:300])
        try:
            data = sorted(resp.json()["data"], key=lambda d: int(d.get("index", 0)))
            vectors = [[float(x) for x in d["embedding"]] for d in data]
        except (ValueError, KeyError, TypeError) as exc:
            raise JudgeError("bad_response", f"embeddings: {resp.text[:200]}") from exc
        if len(vectors) != len(texts):
            raise JudgeError(
                "bad_response", f"embeddings: {len(vectors)} vectors for {len(texts)} texts"
            )
        return vectors
