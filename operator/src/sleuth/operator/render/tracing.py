"""OpenTelemetry environment of the agent and tool-service containers.

The operator's default (:class:`TracingDefaults`, from the chart's ``tracing.*`` values) and an
AgentDeployment's ``spec.agent.tracing`` (each field set there wins) give the effective settings;
:func:`tracing_env` renders them as the standard ``OTEL_*`` variables the sleuth processes read
at their CLI edge. No endpoint, or a sampling ratio of 0, renders nothing: tracing stays off.

A ToolBinding's tool service follows its agent's settings, with its own service name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sleuth.core.api.v1alpha1.common import URL_PATTERN
from sleuth.core.api.v1alpha1.tracing import TracingSpec

# The sampler every rendered pod uses: a fraction of new traces, and every request that arrives
# with a sampled traceparent (the agent's call to a tool service, a client already tracing).
SAMPLER = "parentbased_traceidratio"
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@dataclass(frozen=True)
class TracingDefaults:
    """Operator-wide tracing settings (the chart's ``tracing`` values); empty endpoint: off."""

    endpoint: str = ""
    sampling_ratio: float = 1.0
    capture_content: bool = False

    def __post_init__(self) -> None:
        if self.endpoint and not re.match(URL_PATTERN, self.endpoint):
            raise ValueError(f"tracing endpoint {self.endpoint!r} is not an http(s) URL")
        if not 0 <= self.sampling_ratio <= 1:
            raise ValueError(f"tracing sampling ratio {self.sampling_ratio} is not within [0, 1]")


@dataclass(frozen=True)
class Tracing:
    """The effective settings of one agent and its tool services."""

    endpoint: str
    sampling_ratio: float
    capture_content: bool
    headers_secret: tuple[str, str] | None  # (Secret name, key)

    @property
    def enabled(self) -> bool:
        return bool(self.endpoint) and self.sampling_ratio > 0


def effective_tracing(spec: TracingSpec | None, defaults: TracingDefaults) -> Tracing:
    """``spec`` over ``defaults``, field by field."""
    spec = spec or TracingSpec()
    ref = spec.headers_secret_ref
    return Tracing(
        endpoint=spec.endpoint or defaults.endpoint,
        sampling_ratio=defaults.sampling_ratio
        if spec.sampling_ratio is None
        else spec.sampling_ratio,
        capture_content=defaults.capture_content
        if spec.capture_content is None
        else spec.capture_content,
        headers_secret=(ref.name, ref.key) if ref is not None else None,
    )


def agent_trace_service(agent: str) -> str:
    """``service.name`` of an agent's spans."""
    return f"sleuth-agent-{agent}"


def tool_trace_service(binding: str) -> str:
    """``service.name`` of a tool service's spans (named after its ToolBinding)."""
    return f"sleuth-tool-{binding}"


def _ratio(value: float) -> str:
    return format(value, "g")


def tracing_env(
    tracing: Tracing, service: str, namespace: str, *, messages: bool
) -> list[dict[str, Any]]:
    """The container's ``OTEL_*`` environment; empty when tracing is off.

    ``messages``: whether the process sends prompts at all (the agent does, a tool service does
    not): only then may content capture be switched on.
    """
    if not tracing.enabled:
        return []
    env: list[dict[str, Any]] = [
        {"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": tracing.endpoint},
        {"name": "OTEL_EXPORTER_OTLP_PROTOCOL", "value": "http/protobuf"},
        {"name": "OTEL_SERVICE_NAME", "value": service},
        {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": f"k8s.namespace.name={namespace}"},
        {"name": "OTEL_TRACES_SAMPLER", "value": SAMPLER},
        {"name": "OTEL_TRACES_SAMPLER_ARG", "value": _ratio(tracing.sampling_ratio)},
    ]
    if tracing.headers_secret is not None:
        name, key = tracing.headers_secret
        env.append(
            {
                "name": "OTEL_EXPORTER_OTLP_HEADERS",
                "valueFrom": {"secretKeyRef": {"name": name, "key": key}},
            }
        )
    if messages and tracing.capture_content:
        env.append({"name": CAPTURE_CONTENT_ENV, "value": "true"})
    return env


__all__ = [
    "CAPTURE_CONTENT_ENV",
    "SAMPLER",
    "Tracing",
    "TracingDefaults",
    "agent_trace_service",
    "effective_tracing",
    "tool_trace_service",
    "tracing_env",
]
