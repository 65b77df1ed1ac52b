"""A scripted judge for the seed article's worked example (Redis latency), as a responder.

It reads the input block ragas puts at the end of each prompt ("Now perform the same with the
following input / input: {...} / Output:") and answers the way the article's judge did:

- claims of the generated answer: 4, the fourth (native JSON since 7.2) supported by no chunk;
- chunks C1, C2, C4 relevant, C3 and C5 noise;
- the 3 reference claims attributable to C1, C4 and C2;
- 3 generated questions whose embeddings have cosines 0.91, 0.74, 0.52 with the question.

Any prompt it does not recognise gets an HTTP 500, so a change in ragas' prompts fails loudly.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from sleuth.scripted import ScriptedResponse

QUESTION = (
    "What latency guarantees does Redis offer for in-memory read operations with a 10 GB dataset?"
)
CHUNKS = {
    "C1": "Redis operates in memory; GET has latencies < 1 ms on LAN",
    "C2": "Redis Cluster allows sharding to scale total RAM",
    "C3": "Redis Sentinel manages high availability through automatic failover",
    "C4": "Redis benchmarks: P50 = 0.3 ms, P99 = 0.9 ms on a 10 GB dataset",
    "C5": "Redis Stack adds modules: RedisJSON, RediSearch, RedisTimeSeries",
}
RELEVANT = {"C1", "C2", "C4"}
ANSWER_CLAIMS = {
    "Redis guarantees sub-millisecond latencies for GET on in-RAM datasets.": {"C1", "C4"},
    "With a 10 GB dataset on a LAN, P99 is below 1 ms.": {"C4"},
    "Redis supports horizontal clustering to scale RAM.": {"C2"},
    "Redis has included native JSON support since version 7.2.": set(),
}
REFERENCE_CLAIMS = {
    "Redis operates in memory, so GET is below 1 ms.": {"C1"},
    "P99 is below 1 ms on a LAN with 10 GB.": {"C4"},
    "Clustering scales beyond the RAM of a single node.": {"C2"},
}
GENERATED_QUESTIONS = [
    ("What latencies does Redis offer for in-memory reads?", 0.91),
    ("How does Redis scale horizontally?", 0.74),
    ("Which JSON modules does Redis include?", 0.52),
]
DIMENSIONS = 4


def _unit_with_cosine(cos: float, axis: int) -> list[float]:
    vec = [0.0] * DIMENSIONS
    vec[0] = cos
    vec[axis] = math.sqrt(1.0 - cos * cos)
    return vec


def embedding_vectors() -> dict[str, list[float]]:
    """Exact-text vectors for the scripted /v1/embeddings: the article's cosines."""
    vectors = {QUESTION: [1.0, 0.0, 0.0, 0.0]}
    for axis, (text, cos) in enumerate(GENERATED_QUESTIONS, start=1):
        vectors[text] = _unit_with_cosine(cos, axis)
    return vectors


def prompt_input(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ragas prompt (the first user message; a re-ask appends more) and its input block."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(user[0]["content"]) if user else ""
    marker = "Now perform the same with the following input\ninput: "
    start = text.rfind(marker)
    if start < 0:
        return text, {}
    block = text[start + len(marker) :]
    end = block.rfind("\nOutput:")
    data = json.loads(block[:end] if end >= 0 else block)
    return text, data if isinstance(data, dict) else {}


def _supported(claim: str, context: str) -> bool:
    support = ANSWER_CLAIMS.get(claim, REFERENCE_CLAIMS.get(claim, set()))
    if context.strip() == "" or not support:
        return False
    if any(CHUNKS[c] in context for c in support):
        return True
    # the reference answer as a context (noise sensitivity): it backs claims 1-3 of the answer
    return "Clustering allows scaling" in context and claim in list(ANSWER_CLAIMS)[:3]


class WorkedExampleJudge:
    """Callable responder; ``seen`` counts prompts by kind; ``malformed_first`` kinds answer
    unparsable JSON the first time (to test the single retry)."""

    def __init__(
        self,
        reference: str,
        answer: str,
        malformed: dict[str, int] | None = None,
        questions: list[str] | None = None,
    ) -> None:
        self.reference = reference
        self.answer = answer
        self.malformed = dict(malformed or {})
        self.seen: dict[str, int] = {}
        self._questions = 0
        self.questions = questions or [q for q, _ in GENERATED_QUESTIONS]
        self._lock = threading.Lock()

    def _json(self, kind: str, payload: dict[str, Any]) -> ScriptedResponse:
        with self._lock:
            self.seen[kind] = self.seen.get(kind, 0) + 1
            if self.malformed.get(kind, 0) > 0:
                self.malformed[kind] -= 1
                return ScriptedResponse(content='{"verdict": "this is not json')
        return ScriptedResponse(content=json.dumps(payload))

    def __call__(self, body: dict[str, Any]) -> ScriptedResponse | None:
        text, data = prompt_input(body)
        keys = set(data)
        if keys == {"question", "answer"}:  # statement generation (faithfulness, noise)
            claims = REFERENCE_CLAIMS if data["answer"] == self.reference else ANSWER_CLAIMS
            return self._json("statements", {"statements": list(claims)})
        if keys == {"context", "statements"}:  # NLI
            out = [
                {
                    "statement": s,
                    "reason": "scripted",
                    "verdict": int(_supported(s, data["context"])),
                }
                for s in data["statements"]
            ]
            return self._json("nli", {"statements": out})
        if keys == {"question", "context", "answer"} and "was useful" in text:
            chunk = next((c for c, t in CHUNKS.items() if t == data["context"]), None)
            return self._json(
                "precision", {"reason": "scripted", "verdict": int(chunk in RELEVANT)}
            )
        if keys == {"question", "context", "answer"} and "attributed" in text:
            out = [
                {
                    "statement": s,
                    "reason": "scripted",
                    "attributed": int(any(CHUNKS[c] in data["context"] for c in src)),
                }
                for s, src in REFERENCE_CLAIMS.items()
            ]
            return self._json("recall", {"classifications": out})
        if keys == {"response"}:
            with self._lock:
                q = self.questions[self._questions % len(self.questions)]
                self._questions += 1
            return self._json("relevancy", {"question": q, "noncommittal": 0})
        return ScriptedResponse(status=500, error_message=f"unrecognised judge prompt: {keys}")
