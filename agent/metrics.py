"""Prometheus metrics of the agent service, filled from each run's trace.

All series carry an ``agent`` label (the agent's name) so that one Prometheus can tell agents
apart. Each :class:`AgentMetrics` owns its registry, served at ``/metrics``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from sleuth.agent.trace import Trace

_LATENCY = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 60.0)
_FAST = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class AgentMetrics:
    def __init__(self, agent: str, registry: CollectorRegistry | None = None) -> None:
        self.agent = agent
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.request_seconds = Histogram(
            "sleuth_agent_request_seconds",
            "End-to-end latency of agent requests.",
            ["agent", "endpoint", "outcome"],
            buckets=_LATENCY,
            registry=r,
        )
        self.iterations = Histogram(
            "sleuth_agent_iterations",
            "Tool iterations per request.",
            ["agent"],
            buckets=tuple(range(0, 11)),
            registry=r,
        )
        self.tool_calls = Counter(
            "sleuth_agent_tool_calls_total",
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
            "sleuth_agent_model_ttft_seconds",
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
            "sleuth_agent_tokens_total",
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
            "Requests refused (reason: overloaded, invalid).",
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
        self.in_flight = Gauge(
            "sleuth_agent_requests_in_flight", "Requests being served.", ["agent"], registry=r
        )

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
