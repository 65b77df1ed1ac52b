"""Prometheus metrics of the agent service, filled from each run's trace.

All series carry an ``agent`` label (the agent's name, ``SLEUTH_AGENT_NAME``: the
AgentDeployment's name in a cluster) so that one Prometheus can tell agents apart. Each
:class:`AgentMetrics` owns its registry, served at ``/metrics``; :class:`OnlineEvalMetrics` adds
the online evaluation's scores and counters to it. Names that others query too (the chart's
dashboard, the operator's rules) come from :mod:`sleuth.core.names`.
"""

from __future__ import annotations

import re

from prometheus_client import CONTENT_TYPE_LATEST as TEXT_CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as OPENMETRICS_CONTENT_TYPE
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from sleuth.agent.trace import Trace
from sleuth.core.names import (
    AGENT_IN_FLIGHT,
    AGENT_ITERATIONS,
    AGENT_LABEL,
    AGENT_MODEL_TTFT_SECONDS,
    AGENT_ONLINE_EVAL_DROPPED,
    AGENT_ONLINE_SCORE,
    AGENT_REQUEST_SECONDS,
    AGENT_TOKENS,
    AGENT_TOOL_CALLS,
    AGENT_WAITING_FOR_MODEL,
    ANSWER_RELEVANCY_SCORE,
    FAITHFULNESS_SCORE,
    SOURCE_LABEL,
    SOURCE_ONLINE,
    TRACE_SPANS_DROPPED,
)

_LATENCY = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 60.0)
_SCORE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def model_error_reason(error: str) -> str:
    """A model error's message as a label value with no address in it."""
    if "timed out" in error:
        return "timeout"
    if "unreachable" in error:
        return "connection"
    if match := re.match(r"model server answered (\d{3})", error):
        return f"http_{match.group(1)}"
    if "stream ended" in error:
        return "cut_stream"
    return "bad_response"


def exposition(registry: CollectorRegistry, accept: str | None) -> tuple[bytes, str]:
    """``/metrics`` body and content type: OpenMetrics (which carries the online scores'
    exemplars) when the scraper's Accept header asks for it, else the Prometheus text format."""
    if accept and "application/openmetrics-text" in accept:
        body: bytes = generate_openmetrics(registry)  # type: ignore[no-untyped-call]
        return body, OPENMETRICS_CONTENT_TYPE
    return generate_latest(registry), TEXT_CONTENT_TYPE


class AgentMetrics:
    def __init__(self, agent: str, registry: CollectorRegistry | None = None) -> None:
        self.agent = agent
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.request_seconds = Histogram(
            AGENT_REQUEST_SECONDS,
            "End-to-end latency of agent requests.",
            [AGENT_LABEL, "endpoint", "outcome"],
            buckets=_LATENCY,
            registry=r,
        )
        self.iterations = Histogram(
            AGENT_ITERATIONS,
            "Tool iterations per request.",
            ["agent"],
            buckets=tuple(range(0, 11)),
            registry=r,
        )
        self.tool_calls = Counter(
            AGENT_TOOL_CALLS,
            "Tool calls by tool and outcome (ok, cached, error, unavailable, timeout, ...).",
            ["agent", "tool", "outcome"],
            registry=r,
        )
        self.tool_seconds = Histogram(
            "sleuth_agent_tool_seconds",
            "Latency of tool calls that reached the tool.",
            ["agent", "tool"],
            buckets=_FAST,
            registry=r,
        )
        self.model_ttft_seconds = Histogram(
            AGENT_MODEL_TTFT_SECONDS,
            "Model time to first token (streamed calls).",
            ["agent"],
            buckets=_FAST,
            registry=r,
        )
        self.model_seconds = Histogram(
            "sleuth_agent_model_seconds",
            "Latency of model calls.",
            ["agent", "outcome"],
            buckets=_LATENCY,
            registry=r,
        )
        self.tokens = Counter(
            AGENT_TOKENS,
            "Model tokens by kind (prompt, completion).",
            ["agent", "kind"],
            registry=r,
        )
        self.cache_hits = Counter(
            "sleuth_agent_tool_cache_hits_total",
            "Tool calls answered from the result cache.",
            ["agent", "tool"],
            registry=r,
        )
        self.malformed_tool_calls = Counter(
            "sleuth_agent_malformed_tool_calls_total",
            "Tool calls whose arguments the model sent as invalid JSON.",
            ["agent"],
            registry=r,
        )
        self.rejected_requests = Counter(
            "sleuth_agent_rejected_requests_total",
            "Requests refused (reason: overloaded; invalid: a body or field the API refuses; "
            "too_large: a body over limits.maxBodyBytes or a prompt over the model's context; "
            "slow_body: the body took over limits.bodyReadTimeoutSeconds).",
            ["agent", "reason"],
            registry=r,
        )
        self.spans_dropped = Counter(
            TRACE_SPANS_DROPPED.removesuffix("_total"),
            "Spans never exported (reason: queue_full, export_failed, shutdown): the trace "
            "collector is down or too slow; requests are not slowed.",
            ["agent", "reason"],
            registry=r,
        )
        self.disconnects = Counter(
            "sleuth_agent_client_disconnects_total",
            "Requests whose client went away before the answer; their run was cancelled.",
            ["agent"],
            registry=r,
        )
        self.model_errors = Counter(
            "sleuth_agent_model_errors_total",
            "Failed model calls by reason (timeout, connection, http_<status>, cut_stream, "
            "bad_response; never an address).",
            ["agent", "reason"],
            registry=r,
        )
        self.stops = Counter(
            "sleuth_agent_stops_total",
            "How runs ended (answered, iteration_limit, timeout, model_error).",
            ["agent", "reason"],
            registry=r,
        )
        self.degraded = Counter(
            "sleuth_agent_degraded_requests_total",
            "Requests answered by the deterministic router because the model server failed.",
            ["agent"],
            registry=r,
        )
        self.in_flight = Gauge(AGENT_IN_FLIGHT, "Requests being served.", ["agent"], registry=r)
        self.waiting_for_model = Gauge(
            AGENT_WAITING_FOR_MODEL,
            "Requests that found the model server asleep (scaled to zero) and wait for it, each "
            "counted for at least 30 s: the signal that wakes it.",
            ["agent"],
            registry=r,
        )
        self.online = OnlineEvalMetrics(agent, r)

    def observe_trace(self, trace: Trace, endpoint: str) -> None:
        a = self.agent
        outcome = "ok" if trace.stop_reason == "answered" else trace.stop_reason
        self.request_seconds.labels(a, endpoint, outcome).observe(trace.total_ms / 1000)
        self.iterations.labels(a).observe(trace.iterations)
        self.stops.labels(a, trace.stop_reason).inc()
        for step in trace.model_steps():
            self.model_seconds.labels(a, "error" if step.error else "ok").observe(
                step.duration_ms / 1000
            )
            if step.error:
                self.model_errors.labels(a, model_error_reason(step.error)).inc()
            if step.ttft_ms is not None:
                self.model_ttft_seconds.labels(a).observe(step.ttft_ms / 1000)
        self.tokens.labels(a, "prompt").inc(trace.prompt_tokens)
        self.tokens.labels(a, "completion").inc(trace.completion_tokens)
        for call in trace.tool_calls():
            self.tool_calls.labels(a, call.tool, call.status).inc()
            if call.status == "cached":
                self.cache_hits.labels(a, call.tool).inc()
            elif call.status in ("ok", "error", "unavailable", "timeout"):
                self.tool_seconds.labels(a, call.tool).observe(call.duration_ms / 1000)
        if trace.malformed_tool_calls:
            self.malformed_tool_calls.labels(a).inc(trace.malformed_tool_calls)


class OnlineEvalMetrics:
    """Online evaluation: score gauges (no series until the first score), a histogram of every
    score, and counters.

    ``rag_faithfulness_score`` and ``rag_answer_relevancy_score`` carry ``{agent,
    source="online"}``; their value is the mean of the last ``window`` scored samples.
    ``sleuth_agent_online_score{agent, metric}`` counts every single score in buckets of 0.1;
    an observation whose request was traced carries the exemplar ``{trace_id="<32 hex>"}``
    (exposed in the OpenMetrics format only, see :func:`exposition`).
    """

    def __init__(self, agent: str, registry: CollectorRegistry) -> None:
        self.agent = agent
        r = registry
        window = "mean of the last onlineEval.window scored samples of live traffic"
        self.scores = {
            "faithfulness": Gauge(
                FAITHFULNESS_SCORE,
                f"RAGAS faithfulness of sampled answers ({window}).",
                [AGENT_LABEL, SOURCE_LABEL],
                registry=r,
            ),
            "answer_relevancy": Gauge(
                ANSWER_RELEVANCY_SCORE,
                f"RAGAS answer relevancy of sampled answers ({window}).",
                [AGENT_LABEL, SOURCE_LABEL],
                registry=r,
            ),
        }
        self.score_histogram = Histogram(
            AGENT_ONLINE_SCORE,
            "Every online score of a sampled answer, by metric; exemplar trace_id links a "
            "score to its request's trace.",
            [AGENT_LABEL, "metric"],
            buckets=_SCORE,
            registry=r,
        )
        self.window_samples = Gauge(
            "sleuth_agent_online_eval_window_samples",
            "Scored samples the online score gauges currently average (at most the window).",
            ["agent", "metric"],
            registry=r,
        )
        self.sampled = Counter(
            "sleuth_agent_online_eval_sampled_total",
            "Answered requests sampled for online evaluation, by metric (queued or dropped).",
            ["agent", "metric"],
            registry=r,
        )
        self.dropped = Counter(
            AGENT_ONLINE_EVAL_DROPPED,
            "Samples dropped because the online-eval queue was full, by metric.",
            ["agent", "metric"],
            registry=r,
        )
        self.scored = Counter(
            "sleuth_agent_online_eval_scored_total",
            "Samples the judge scored, by metric.",
            ["agent", "metric"],
            registry=r,
        )
        self.errors = Counter(
            "sleuth_agent_online_eval_errors_total",
            "Samples the judge failed to score, by metric and reason (timeout, connection, "
            "http_<status>, unparsable, truncated, no_verdicts, bad_response, invalid_sample, "
            "error; setup: the judge could not be built and online evaluation is off).",
            ["agent", "metric", "reason"],
            registry=r,
        )
        self.skipped = Counter(
            "sleuth_agent_online_eval_skipped_total",
            "Samples a metric cannot score, by reason (no_contexts: nothing was retrieved; "
            "model_asleep: the judge, the agent's model server, did not wake within "
            "wakeWaitSeconds).",
            ["agent", "metric", "reason"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "sleuth_agent_online_eval_queue_depth",
            "Sampled answers waiting to be scored.",
            ["agent"],
            registry=r,
        )

    def start(self, metrics: list[str]) -> None:
        """Show the counters at 0 from the start, so rate() sees the first increase."""
        self.queue_depth.labels(self.agent).set(0)
        for m in metrics:
            for counter in (self.sampled, self.dropped, self.scored):
                counter.labels(self.agent, m)

    def observe_score(self, metric: str, value: float, trace_id: str | None) -> None:
        """One score into the histogram, with its request's trace id as exemplar when known."""
        exemplar = {"trace_id": trace_id} if trace_id else None
        self.score_histogram.labels(self.agent, metric).observe(value, exemplar=exemplar)

    def set_score(self, metric: str, mean: float, samples: int) -> None:
        self.scores[metric].labels(self.agent, SOURCE_ONLINE).set(mean)
        self.window_samples.labels(self.agent, metric).set(samples)
