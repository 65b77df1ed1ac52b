"""One function per metric: a sample and the guarded judge in, a value (and details) out.

The metric logic is ragas' (``ragas.metrics.collections``), with one exception: context
precision asks ragas' own prompt once per retrieved chunk and keeps the verdicts, so both forms
come from the same verdicts: the rank-weighted average precision that ragas reports (computed by
ragas' own function) and the simple relevant/K form of the seed article.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ragas.metrics.collections import (
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
    NoiseSensitivity,
)
from ragas.metrics.collections.context_precision.util import (
    ContextPrecisionInput,
    ContextPrecisionOutput,
    ContextPrecisionPrompt,
)

from sleuth.scoring.judge import GuardedEmbeddings, GuardedJudge, JudgeError
from sleuth.scoring.samples import RagSample

FAITHFULNESS = "faithfulness"
ANSWER_RELEVANCY = "answer_relevancy"
CONTEXT_PRECISION = "context_precision"
CONTEXT_PRECISION_SIMPLE = "context_precision_simple"
CONTEXT_RECALL = "context_recall"
NOISE_SENSITIVITY = "noise_sensitivity"

ALL_METRICS = (FAITHFULNESS, ANSWER_RELEVANCY, CONTEXT_PRECISION, CONTEXT_RECALL, NOISE_SENSITIVITY)
"""Selectable metrics; ``context_precision`` yields both of its forms."""

NEEDS_REFERENCE = frozenset({CONTEXT_PRECISION, CONTEXT_RECALL, NOISE_SENSITIVITY})
NEEDS_CONTEXTS = frozenset({FAITHFULNESS, CONTEXT_PRECISION, CONTEXT_RECALL, NOISE_SENSITIVITY})
LOWER_IS_BETTER = frozenset({NOISE_SENSITIVITY})


@dataclass
class MetricValues:
    """Values produced by one metric on one row (context precision yields two)."""

    values: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class Judges:
    llm: GuardedJudge
    embeddings: GuardedEmbeddings
    answer_relevancy_strictness: int = 3


def _finite(name: str, value: float) -> float:
    if value is None or math.isnan(value):
        raise JudgeError("no_verdicts", f"{name}: the judge produced no statements to score")
    return float(value)


async def faithfulness(s: RagSample, j: Judges) -> MetricValues:
    r = await Faithfulness(llm=j.llm).ascore(
        user_input=s.question, response=s.answer, retrieved_contexts=s.contexts
    )
    return MetricValues({FAITHFULNESS: _finite(FAITHFULNESS, r.value)})


async def answer_relevancy(s: RagSample, j: Judges) -> MetricValues:
    metric = AnswerRelevancy(
        llm=j.llm, embeddings=j.embeddings, strictness=j.answer_relevancy_strictness
    )
    r = await metric.ascore(user_input=s.question, response=s.answer)
    return MetricValues({ANSWER_RELEVANCY: _finite(ANSWER_RELEVANCY, r.value)})


_PRECISION_PROMPT = ContextPrecisionPrompt()


async def context_precision(s: RagSample, j: Judges) -> MetricValues:
    """Both forms from one verdict per chunk (chunks judged concurrently, in rank order)."""
    assert s.reference is not None

    async def verdict(ctx: str) -> int:
        prompt = _PRECISION_PROMPT.to_string(
            ContextPrecisionInput(question=s.question, context=ctx, answer=s.reference or "")
        )
        out = await j.llm.agenerate(prompt, ContextPrecisionOutput)
        return 1 if int(out.verdict) else 0

    verdicts = list(await asyncio.gather(*(verdict(c) for c in s.contexts)))
    ragas_metric = ContextPrecision(llm=j.llm)
    rank_weighted = float(ragas_metric._calculate_average_precision(verdicts))
    simple = sum(verdicts) / len(verdicts)
    return MetricValues(
        {CONTEXT_PRECISION: rank_weighted, CONTEXT_PRECISION_SIMPLE: simple},
        {"verdicts": verdicts},
    )


async def context_recall(s: RagSample, j: Judges) -> MetricValues:
    r = await ContextRecall(llm=j.llm).ascore(
        user_input=s.question, retrieved_contexts=s.contexts, reference=s.reference or ""
    )
    return MetricValues({CONTEXT_RECALL: _finite(CONTEXT_RECALL, r.value)})


async def noise_sensitivity(s: RagSample, j: Judges) -> MetricValues:
    r = await NoiseSensitivity(llm=j.llm, mode="relevant").ascore(
        user_input=s.question,
        response=s.answer,
        reference=s.reference or "",
        retrieved_contexts=s.contexts,
    )
    return MetricValues({NOISE_SENSITIVITY: _finite(NOISE_SENSITIVITY, r.value)})


MetricFn = Callable[[RagSample, Judges], Awaitable[MetricValues]]

METRIC_FUNCTIONS: dict[str, MetricFn] = {
    FAITHFULNESS: faithfulness,
    ANSWER_RELEVANCY: answer_relevancy,
    CONTEXT_PRECISION: context_precision,
    CONTEXT_RECALL: context_recall,
    NOISE_SENSITIVITY: noise_sensitivity,
}


def judge_calls_per_row(metric: str, contexts: int, strictness: int = 3) -> int:
    """Chat calls one row costs (for the benchmark's ideal time), first attempts only."""
    return {
        FAITHFULNESS: 2,
        ANSWER_RELEVANCY: strictness,
        CONTEXT_PRECISION: contexts,
        CONTEXT_RECALL: 1,
        NOISE_SENSITIVITY: 3 + 2 * contexts,
    }[metric]
