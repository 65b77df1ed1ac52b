"""Building a golden dataset from corpus chunks with an LLM behind an OpenAI-compatible endpoint.

The generator is called through the one model client (:mod:`sleuth.core.llm`) in JSON mode; a
failed call is an :class:`~sleuth.evals.errors.EndpointError`, listed in the report's failures.

1. Stratified sampling of seed chunks: round-robin over (source, section, year) groups, with a
   seeded shuffle, so no single document dominates.
2. Questions answerable only from the fragment (the seed article's prompt intent), then a
   reference answer written from the fragment alone.
3. Multi-hop questions over 2-4 related chunks (same source, neighbouring order).
4. Adversarial questions: a false premise, or a question the corpus cannot answer; their
   reference is "I do not have enough information."

Every generated case gets its split from its content hash (:mod:`sleuth.evals.splits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sleuth.core.errors import ModelError
from sleuth.core.llm import OpenAIChatModel
from sleuth.evals.errors import EndpointError
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION, GoldenCase
from sleuth.evals.golden.corpus import Chunk
from sleuth.evals.progress import Progress
from sleuth.evals.splits import content_hash, split_for

QUESTION_PROMPT = """Given the following documentation fragment, generate {n} specific questions \
that can only be answered correctly using THIS fragment and not general knowledge. The questions \
should be the ones an engineer looking for operational information would ask.
Reply with JSON: {{"questions": ["..."]}}
Fragment: {chunk}"""

ANSWER_PROMPT = """Answer the question using ONLY the fragments below; do not add general \
knowledge. Be concise and complete.
Reply with JSON: {{"answer": "..."}}
Question: {question}
Fragments:
{chunks}"""

MULTI_HOP_PROMPT = """Given these {k} related documentation fragments, write one question whose \
correct answer needs information from ALL of them (not from any single one) and not general \
knowledge, and its answer using only the fragments.
Reply with JSON: {{"question": "...", "answer": "..."}}
Fragments:
{chunks}"""

ADVERSARIAL_PROMPT = """Given the documentation fragment below, write one question that either \
rests on a false premise contradicting the fragment, or asks for something the fragment and the \
rest of the corpus cannot answer, while sounding plausible to an engineer. The correct answer to \
it is "I do not have enough information".
Reply with JSON: {{"question": "..."}}
Fragment: {chunk}"""


@dataclass
class GeneratorConfig:
    base_url: str
    model: str
    api_key: str = "sk-local"
    timeout_s: float = 120.0
    concurrency: int = 4
    max_tokens: int = 2048
    questions_per_chunk: int = 2
    seeds: int = 50
    multi_hop: int = 10
    adversarial: int = 10
    random_seed: int = 7
    test_percent: int = 30


@dataclass
class BuildReport:
    cases: list[GoldenCase]
    failed: list[dict[str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def stratified_sample(chunks: Sequence[Chunk], n: int, seed: int = 7) -> list[Chunk]:
    """Up to ``n`` chunks, round-robin over (source, section, year) groups."""
    groups: dict[tuple[str, str, str], list[Chunk]] = defaultdict(list)
    for c in chunks:
        groups[(c.source, c.section, c.date[:4])].append(c)
    rng = random.Random(seed)
    keys = sorted(groups)
    rng.shuffle(keys)
    for k in keys:
        rng.shuffle(groups[k])
    out: list[Chunk] = []
    while len(out) < n and any(groups[k] for k in keys):
        for k in keys:
            if groups[k] and len(out) < n:
                out.append(groups[k].pop())
    return out


def related_groups(chunks: Sequence[Chunk], count: int, seed: int = 7) -> list[list[Chunk]]:
    """Groups of 2-4 neighbouring chunks of the same source (multi-hop material)."""
    by_source: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_source[c.source].append(c)
    rng = random.Random(seed)
    candidates: list[list[Chunk]] = []
    for src in sorted(by_source):
        items = by_source[src]
        for i in range(0, len(items) - 1, 2):
            k = rng.randint(2, 4)
            group = items[i : i + k]
            if len(group) >= 2:
                candidates.append(group)
    rng.shuffle(candidates)
    return candidates[:count]


class _Llm:
    def __init__(self, cfg: GeneratorConfig, report: BuildReport) -> None:
        self.model = OpenAIChatModel(
            cfg.base_url,
            cfg.model,
            timeout_s=cfg.timeout_s,
            stream=False,
            temperature=0.0,
            max_tokens=cfg.max_tokens,
            api_key=cfg.api_key,
            max_connections=max(1, cfg.concurrency),
            response_format={"type": "json_object"},
        )
        self.report = report
        self.sem = asyncio.Semaphore(max(1, cfg.concurrency))

    async def json(self, prompt: str) -> dict[str, Any]:
        """One JSON-mode completion; one retry when the reply is not a JSON object."""
        last = ""
        for _ in range(2):
            async with self.sem:
                try:
                    turn = await self.model.complete([{"role": "user", "content": prompt}], [])
                except ModelError as exc:
                    raise EndpointError(
                        f"generator endpoint: {exc}", retryable=exc.retryable
                    ) from exc
            self.report.prompt_tokens += turn.prompt_tokens
            self.report.completion_tokens += turn.completion_tokens
            last = turn.content or ""
            try:
                data = json.loads(last)
            except json.JSONDecodeError:
                continue
            if isinstance(data, dict):
                return data
        raise EndpointError(f"generator reply is not a JSON object: {last[:120]!r}")

    async def aclose(self) -> None:
        await self.model.aclose()


def _case(question: str, reference: str, ids: list[str], stratum: str, pct: int) -> GoldenCase:
    return GoldenCase(
        id="g-" + content_hash(question)[:10],
        question=question.strip(),
        reference=reference.strip(),
        reference_context_ids=ids,
        stratum=stratum,
        split=split_for(question, pct),
    )


def _fmt(chunks: Sequence[Chunk]) -> str:
    return "\n\n".join(f"[{c.id}] {c.text}" for c in chunks)


async def build(
    chunks: Sequence[Chunk], cfg: GeneratorConfig, *, progress: bool = False
) -> BuildReport:
    """Generate easy, multi-hop and adversarial cases; failures are listed, not hidden."""
    report = BuildReport(cases=[])
    seeds = stratified_sample(chunks, cfg.seeds, cfg.random_seed)
    groups = related_groups(chunks, cfg.multi_hop, cfg.random_seed)
    rng = random.Random(cfg.random_seed + 1)
    adversarial = rng.sample(list(chunks), min(cfg.adversarial, len(chunks)))
    bar = Progress(len(seeds) + len(groups) + len(adversarial), "golden", enabled=progress)
    pct = cfg.test_percent
    async with contextlib.aclosing(_Llm(cfg, report)) as llm:

        async def easy(c: Chunk) -> list[GoldenCase]:
            q = await llm.json(QUESTION_PROMPT.format(n=cfg.questions_per_chunk, chunk=c.text))
            out = []
            for question in [str(x) for x in q.get("questions", [])][: cfg.questions_per_chunk]:
                a = await llm.json(ANSWER_PROMPT.format(question=question, chunks=_fmt([c])))
                out.append(_case(question, str(a.get("answer", "")), [c.id], "easy", pct))
            return out

        async def hop(g: list[Chunk]) -> list[GoldenCase]:
            r = await llm.json(MULTI_HOP_PROMPT.format(k=len(g), chunks=_fmt(g)))
            return [
                _case(str(r["question"]), str(r["answer"]), [c.id for c in g], "multi-hop", pct)
            ]

        async def adv(c: Chunk) -> list[GoldenCase]:
            r = await llm.json(ADVERSARIAL_PROMPT.format(chunk=c.text))
            return [_case(str(r["question"]), NOT_ENOUGH_INFORMATION, [], "adversarial", pct)]

        async def guard(kind: str, ref: str, coro: Any) -> list[GoldenCase]:
            try:
                made: list[GoldenCase] = await coro
            except (EndpointError, KeyError, ValueError) as exc:
                report.failed.append({"kind": kind, "source": ref, "reason": str(exc)})
                bar.advance(failed=True)
                return []
            bar.advance()
            return made

        batches = await asyncio.gather(
            *(guard("easy", c.id, easy(c)) for c in seeds),
            *(guard("multi-hop", ",".join(c.id for c in g), hop(g)) for g in groups),
            *(guard("adversarial", c.id, adv(c)) for c in adversarial),
        )
    seen: set[str] = set()
    for batch in batches:
        for case in batch:
            if case.question and case.reference and case.id not in seen:
                seen.add(case.id)
                report.cases.append(case)
    return report
