"""The spans of a scheduled eval run: the run, one trace per golden question, its scores.

``sleuth eval ragas --agent-url`` with tracing on (the standard ``OTEL_*`` variables, read at the
command's edge, service name ``sleuth-eval`` by default) makes:

- ``eval ragas <dataset>``: one span for the whole run (its own trace), with the agent, dataset,
  split, run id and the number of questions;
- ``eval_case <case id>`` (CLIENT): one per golden question, the root of a trace of its own that
  links to the run's span. Its ``traceparent`` goes with the question to the agent, whose
  ``invoke_agent`` span (and its model and tool calls, and the tool services' spans) is then a
  child: the trace id the agent answers with is this one, and is the row's ``traceId``;
- ``evaluate <metric>`` (INTERNAL): one per score of the answer, under its question's span,
  with ``sleuth.eval.score.<metric>`` and the GenAI ``gen_ai.evaluation.result`` event; a metric
  that could not be scored says why (``sleuth.eval.score.error``, status ERROR).

So the row the report lists as low leads, in the trace backend, to the request that produced it,
what it retrieved, and the score beside it. One trace per question (not one per run) keeps each
trace the size of one request and its id the one the agent gave out. With tracing off every call
here is a no-op.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind

from sleuth.core.spans import (
    EVAL_AGENT,
    EVAL_CASE,
    EVAL_CASE_ID,
    EVAL_CASE_STRATUM,
    EVAL_CASES,
    EVAL_DATASET,
    EVAL_KIND,
    EVAL_RUN,
    EVAL_RUN_ID,
    EVAL_SCORE_PREFIX,
    EVAL_SPLIT,
    evaluation_span,
    fail,
    record_failure,
    record_score,
)
from sleuth.core.tracing import Tracing, inject_headers

EVAL_SERVICE = "sleuth-eval"
"""``service.name`` of the eval's spans unless ``OTEL_SERVICE_NAME`` says otherwise."""
SCORE_ERROR = f"{EVAL_SCORE_PREFIX}error"


class EvalTrace:
    """Spans of one run; remembers each question's span to hang its scores under."""

    def __init__(self, tracing: Tracing) -> None:
        self.tracing = tracing
        self._run: SpanContext | None = None
        self._run_span: Span | None = None
        self._cases: dict[str, SpanContext] = {}

    @classmethod
    def off(cls) -> EvalTrace:
        return cls(Tracing.disabled())

    @contextmanager
    def run(self, kind: str, labels: Mapping[str, str]) -> Iterator[Span]:
        """The run's span (``labels``: agent, dataset, split, run_id; empty ones left out)."""
        names = {"agent": EVAL_AGENT, "dataset": EVAL_DATASET, "split": EVAL_SPLIT}
        attributes: dict[str, str | int] = {EVAL_KIND: kind}
        attributes.update({names.get(k, EVAL_RUN_ID): v for k, v in labels.items() if v})
        with self.tracing.tracer.start_as_current_span(
            f"{EVAL_RUN} {kind} {labels.get('dataset', '')}".rstrip(),
            context=Context(),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        ) as span:
            self._run = span.get_span_context() if span.is_recording() else None
            self._run_span = span
            yield span

    def asking(self, cases: int) -> None:
        """How many questions the run asks (on the run's span)."""
        if self._run_span is not None:
            self._run_span.set_attribute(EVAL_CASES, cases)

    @contextmanager
    def case(self, case_id: str, stratum: str) -> Iterator[dict[str, str]]:
        """The span of one golden question; yields the headers that carry it to the agent
        (``traceparent``; none when tracing is off). An exception marks it failed."""
        links = [Link(self._run)] if self._run is not None else []
        with self.tracing.tracer.start_as_current_span(
            f"{EVAL_CASE} {case_id}",
            context=Context(),  # a trace of its own, linked to the run
            kind=SpanKind.CLIENT,
            attributes={EVAL_CASE_ID: case_id, EVAL_CASE_STRATUM: stratum},
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            if span.is_recording():
                self._cases[case_id] = span.get_span_context()
            try:
                yield inject_headers({})
            except BaseException as exc:
                fail(span, exc, str(exc)[:300] or None)
                raise

    def case_trace_id(self, case_id: str) -> str | None:
        """The trace id of a question's span (None when tracing is off)."""
        context = self._cases.get(case_id)
        return None if context is None else format(context.trace_id, "032x")

    def failed(self, case_id: str, reason: str) -> None:
        """A question the agent did not answer: an ``evaluate agent`` span says why."""
        with evaluation_span(self.tracing.tracer, "agent", self._cases.get(case_id)) as span:
            record_failure(span, SCORE_ERROR, reason)

    @contextmanager
    def scoring(self, case_id: str, metric: str) -> Iterator[Span | None]:
        """The span of one metric scored on a question's answer (None when the question has no
        span: tracing off, or rows that did not come from the agent in this run)."""
        with evaluation_span(self.tracing.tracer, metric, self._cases.get(case_id)) as span:
            yield span

    @staticmethod
    def scored(span: Span | None, values: Mapping[str, float]) -> None:
        for metric, value in values.items():
            record_score(span, EVAL_SCORE_PREFIX, metric, value)

    @staticmethod
    def unscored(span: Span | None, reason: str) -> None:
        record_failure(span, SCORE_ERROR, reason)


__all__ = ["EVAL_SERVICE", "SCORE_ERROR", "EvalTrace"]
