"""Online evaluation: score a sampled share of live answers with the judge, off the request path.

The request path only calls :meth:`OnlineEvaluator.offer`: a random draw against
``onlineEval.sampleRate`` and, for a sampled answer, a non-blocking put into a bounded queue.
When the queue is full the sample is dropped and counted; nothing waits and nothing raises
towards the user. ``onlineEval.concurrency`` worker tasks take samples from the queue and score
faithfulness and answer relevancy with the functions of :mod:`sleuth.scoring.metrics` (the
same ragas metrics, judge client and guards as ``sleuth eval ragas``). A judge that is down,
slow or talks nonsense only increments ``sleuth_agent_online_eval_errors_total``.

Each score enters a window of the last ``onlineEval.window`` scores per metric; the window's mean
is exported as ``rag_faithfulness_score{agent, source="online"}`` and
``rag_answer_relevancy_score{agent, source="online"}`` (no series before the first score, so
an alert cannot fire on a 0 that nobody measured).

Every single score also goes into the histogram ``sleuth_agent_online_score{agent, metric}``
with the exemplar ``{trace_id}`` of its request, and onto the request's trace: a span
``evaluate <metric>`` (child of the span that was current when the answer was offered) carrying
``sleuth.online.<metric>`` and a ``gen_ai.evaluation.result`` event. A low score on the
dashboard thus leads to the request, its tool calls and its retrieved chunks. Only the
OpenTelemetry API is used here: without a configured tracer provider the spans are no-ops.

The judge defaults to the agent's own model server and model. When that server may sleep at zero
replicas (``model.wakeWaitSeconds`` set), a judge call it refuses waits for it as a request does
(:mod:`sleuth.agent.wake`: the waiting-for-model series wakes it, up to the same bound) and is
asked once more; if it does not wake in time the sample's metric is skipped
(``sleuth_agent_online_eval_skipped_total{reason="model_asleep"}``), not an error. A judge of its
own (``onlineEval.judge``) is not waited for. ragas is imported only when sampling is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from opentelemetry import trace as otel

from sleuth.agent.metrics import OnlineEvalMetrics
from sleuth.agent.trace import Trace
from sleuth.agent.wake import ModelWake, judge_asleep
from sleuth.core.api.agent_config import AgentConfig
from sleuth.core.spans import ONLINE_SCORE_PREFIX, evaluation_span, record_failure, record_score
from sleuth.scoring.errors import JudgeError
from sleuth.scoring.samples import RagSample

if TYPE_CHECKING:
    from sleuth.scoring.judge import JudgeBundle, JudgeConfig
    from sleuth.scoring.metrics import Judges

log = logging.getLogger("sleuth.agent.online_eval")


"""A ``/v1/query`` request carrying this header (the scheduled eval's) is never sampled."""

ONLINE_ERROR = f"{ONLINE_SCORE_PREFIX}error"

METRICS = ("faithfulness", "answer_relevancy")
"""Metrics scored online: the two that need no reference answer."""

ASLEEP = object()
"""What :meth:`OnlineEvaluator._judge` returns when the judge slept through the wake bound."""


@dataclass(frozen=True)
class Sample:
    """What was asked, answered and retrieved in one answered request."""

    question: str
    answer: str
    contexts: list[str]
    trace_id: str | None = None
    """The request's trace id (32 lowercase hex), the exemplar of its scores."""
    parent: otel.SpanContext | None = None
    """Where the scores go on the trace: the span current when the answer was offered."""


def trace_parent(trace_id: str | None) -> tuple[str | None, otel.SpanContext | None]:
    """The trace id and the parent span for a sample offered now.

    The current span (the request's, when tracing is on and the trace is sampled) is the
    parent, and its trace id the default id. A ``trace_id`` from elsewhere with no such span
    still puts the scores on that trace, under a span id of their own (the trace UI shows them
    with an unknown parent).
    """
    current = otel.get_current_span().get_span_context()
    own = current.is_valid and current.trace_flags.sampled  # an id the trace backend will have
    if own and (trace_id is None or trace_id == otel.format_trace_id(current.trace_id)):
        return otel.format_trace_id(current.trace_id), current
    if trace_id is None:
        return None, None
    try:
        number = int(trace_id, 16)
    except ValueError:
        return None, None
    if len(trace_id) != 32 or number == 0:
        return None, None
    parent = otel.SpanContext(
        trace_id=number,
        span_id=random.getrandbits(64) or 1,
        is_remote=True,
        trace_flags=otel.TraceFlags(otel.TraceFlags.SAMPLED),
    )
    return trace_id, parent


def judge_config(config: AgentConfig) -> JudgeConfig:
    """The judge of ``config.online_eval``: its own, or the agent's model server and model."""
    # optional at run time: ragas (sleuth.scoring.judge, .metrics) loads only when sampling is on
    from sleuth.scoring.judge import LOCAL_EMBEDDINGS, JudgeConfig

    online = config.online_eval
    if online.judge is not None:
        url, model, key_env = (
            str(online.judge.endpoint),
            online.judge.model,
            online.judge.api_key_env,
        )
    else:
        url = str(config.model.endpoint)
        model, key_env = config.model.served_model_name, config.model.api_key_env
    emb = online.embeddings
    emb_url = {"judge": None, "local": LOCAL_EMBEDDINGS, "endpoint": str(emb.endpoint)}[emb.source]
    emb_key = os.environ.get(emb.api_key_env) if emb.api_key_env else None
    return JudgeConfig(
        base_url=url.rstrip("/"),
        model=model,
        api_key=(os.environ.get(key_env) if key_env else None) or "sk-local",
        timeout_s=online.timeout_seconds,
        concurrency=online.concurrency,
        embeddings_base_url=emb_url.rstrip("/") if emb_url else None,
        embeddings_model=emb.model,
        embeddings_api_key=emb_key or None,
    )


class OnlineEvaluator:
    """The sampler, its bounded queue and its scoring workers (see the module docstring)."""

    def __init__(
        self,
        config: AgentConfig,
        metrics: OnlineEvalMetrics,
        rng: random.Random | None = None,
        tracer: otel.Tracer | None = None,
        wake: ModelWake | None = None,
    ) -> None:
        """``wake``: how to wait for the agent's model server when it sleeps; used only when it
        is the judge (no ``onlineEval.judge``)."""
        self.config = config
        self.wake = wake if config.online_eval.judge is None else None
        # the agent's tracer (sleuth.core.tracing travels as an object, no global provider);
        # without one, the API's global tracer: a no-op unless someone set a global provider
        self.tracer = tracer or otel.get_tracer("sleuth.agent.onlineeval")
        self.online = config.online_eval
        self.metrics = metrics
        self.agent = metrics.agent
        self.rng = rng or random.Random()
        self.queue: asyncio.Queue[Sample] = asyncio.Queue(maxsize=self.online.queue_size)
        self.windows: dict[str, deque[float]] = {
            m: deque(maxlen=self.online.window) for m in METRICS
        }
        self._workers: list[asyncio.Task[None]] = []
        self._bundle: JudgeBundle | None = None
        self._judges: Judges | None = None

    @property
    def enabled(self) -> bool:
        return self.online.sample_rate > 0

    async def start(self) -> None:
        """Build the judge and start the workers (inside the running loop); no-op when off.

        A judge that cannot even be built (``errors_total{reason="setup"}``, logged) leaves online
        evaluation off; the agent serves as usual.
        """
        if not self.enabled or self._workers:
            return
        # optional at run time: ragas (sleuth.scoring.judge, .metrics) loads only if sampling is on
        from sleuth.scoring.judge import build_judge
        from sleuth.scoring.metrics import Judges

        self.metrics.start(list(METRICS))
        try:
            self._bundle = build_judge(judge_config(self.config))
        except Exception as exc:  # e.g. embeddings.source local without the model files
            for m in METRICS:
                self._error(m, "setup", f"{type(exc).__name__}: {exc}")
            log.error("online evaluation is off: the judge could not be set up: %s", exc)
            return
        self._judges = Judges(self._bundle.llm, self._bundle.embeddings)
        self._workers = [
            asyncio.create_task(self._work(), name=f"online-eval-{i}")
            for i in range(self.online.concurrency)
        ]

    async def aclose(self) -> None:
        """Stop the workers (samples still queued are abandoned) and close the judge."""
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []
        if self._bundle is not None:
            await self._bundle.aclose()
            self._bundle = None

    def offer(self, question: str, answer: str, trace: Trace, trace_id: str | None = None) -> bool:
        """On the request path: maybe sample this answer. Never blocks, never raises.

        Only answered runs are candidates (not iteration limits, timeouts or model errors).
        ``trace_id`` is the request's trace id; by default that of the current span (see
        :func:`trace_parent`). Returns True when the sample was queued.
        """
        if not self._workers or trace.stop_reason != "answered" or not answer.strip():
            return False
        if self.rng.random() >= self.online.sample_rate:
            return False
        for m in METRICS:
            self.metrics.sampled.labels(self.agent, m).inc()
        try:
            tid, parent = trace_parent(trace_id)
            self.queue.put_nowait(Sample(question, answer, trace.contexts(), tid, parent))
        except asyncio.QueueFull:
            for m in METRICS:
                self.metrics.dropped.labels(self.agent, m).inc()
            return False
        self.metrics.queue_depth.labels(self.agent).set(self.queue.qsize())
        return True

    async def _work(self) -> None:
        while True:
            sample = await self.queue.get()
            self.metrics.queue_depth.labels(self.agent).set(self.queue.qsize())
            try:
                await asyncio.gather(*(self._score(m, sample) for m in METRICS))
            finally:
                self.queue.task_done()

    async def _score(self, metric: str, sample: Sample) -> None:
        """Score one metric of one sample; every failure becomes a counted reason."""
        # optional at run time: ragas (sleuth.scoring.judge, .metrics) loads only if sampling is on
        from sleuth.scoring.metrics import NEEDS_CONTEXTS

        if metric in NEEDS_CONTEXTS and not sample.contexts:
            self.metrics.skipped.labels(self.agent, metric, "no_contexts").inc()
            return
        with evaluation_span(self.tracer, metric, sample.parent) as span:
            value = await self._judge(metric, sample, span)
            if value is None:
                return
            if value is ASLEEP:
                self.metrics.skipped.labels(self.agent, metric, "model_asleep").inc()
                return
            assert isinstance(value, float)
            record_score(span, ONLINE_SCORE_PREFIX, metric, value)
        window = self.windows[metric]
        window.append(value)
        self.metrics.scored.labels(self.agent, metric).inc()
        self.metrics.observe_score(metric, value, sample.trace_id)
        self.metrics.set_score(metric, sum(window) / len(window), len(window))

    async def _judge(
        self, metric: str, sample: Sample, span: otel.Span | None
    ) -> float | object | None:
        """The judge's score; :data:`ASLEEP` when the judge slept through the wake bound; or
        None with the failure counted (and set on the span)."""
        try:
            try:
                return await self._ask(metric, sample)
            except JudgeError as exc:
                if self.wake is None or not judge_asleep(exc.reason):
                    raise
                if not await self.wake.wait():  # counted where the model server's trigger reads
                    log.info("online eval of %s skipped: the judge stayed asleep", metric)
                    return ASLEEP
            return await self._ask(metric, sample)  # awake: asked once more
        except JudgeError as exc:
            self._error(metric, exc.reason, exc.detail, span)
            return None
        except ValueError as exc:  # ragas' or RagSample's input validation
            self._error(metric, "invalid_sample", str(exc), span)
            return None
        except Exception as exc:  # a worker must survive whatever the judge stack raises
            self._error(metric, "error", f"{type(exc).__name__}: {exc}", span)
            return None

    async def _ask(self, metric: str, sample: Sample) -> float:
        """One score from the judge (raises what the judge stack raises)."""
        # optional at run time: ragas (sleuth.scoring.judge, .metrics) loads only if sampling is on
        from sleuth.scoring.metrics import METRIC_FUNCTIONS

        assert self._judges is not None
        row = RagSample(
            id="online",
            question=sample.question,
            answer=sample.answer,
            contexts=sample.contexts,
        )
        out = await METRIC_FUNCTIONS[metric](row, self._judges)
        value: float = out.values[metric]
        return value

    def _error(self, metric: str, reason: str, detail: str, span: otel.Span | None = None) -> None:
        self.metrics.errors.labels(self.agent, metric, reason).inc()
        record_failure(span, ONLINE_ERROR, reason)
        log.warning("online eval of %s failed (%s): %s", metric, reason, detail[:300])


__all__ = ["METRICS", "OnlineEvaluator", "Sample", "judge_config"]
