"""``spec.agent.tracing`` of an AgentDeployment: where the agent and its tool services send traces.

Every field is optional and overrides the operator-wide default (the chart's ``tracing.*``
values, passed to the operator as flags). The operator renders the result as the standard
OpenTelemetry environment variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
``OTEL_TRACES_SAMPLER``/``_ARG``, ...) of the agent and tool-service containers
(``sleuth.operator.render.tracing``); the processes read them at their CLI edge.
"""

from __future__ import annotations

from pydantic import Field

from sleuth.core.api.v1alpha1.common import URL_PATTERN, SecretKeyRef, SpecModel


class TracingSpec(SpecModel):
    """OpenTelemetry traces of the agent and its tool services, exported over OTLP/HTTP."""

    endpoint: str | None = Field(
        default=None,
        max_length=2048,
        pattern=URL_PATTERN,
        description="Base URL of an OTLP/HTTP (protobuf) receiver, e.g. "
        "http://jaeger-collector.observability:4318; spans go to <endpoint>/v1/traces. Given to "
        "the agent and its tool services as OTEL_EXPORTER_OTLP_ENDPOINT. Omitted: the operator's "
        "default (the chart's tracing.endpoint); tracing is off when neither names one.",
    )
    sampling_ratio: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Fraction (0-1) of new traces recorded (sampler parentbased_traceidratio: "
        "a request arriving with a sampled W3C traceparent is always recorded); 0 turns tracing "
        "off for this agent. Omitted: the operator's default (the chart's "
        "tracing.samplingRatio, 1 unless set).",
    )
    capture_content: bool | None = Field(
        default=None,
        description="Record prompt and completion text on the model-call spans "
        "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT). Prompts and answers may hold "
        "personal or confidential data: leave it off unless the trace backend may hold them. "
        "Omitted: the operator's default (the chart's tracing.captureContent, false unless set).",
    )
    headers_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Secret key whose value becomes OTEL_EXPORTER_OTLP_HEADERS of the agent "
        "and its tool services (comma-separated key=value pairs, values URL-encoded), e.g. "
        "Authorization=Basic%20<base64 of public-key:secret-key> for Langfuse's "
        "/api/public/otel endpoint.",
    )


__all__ = ["TracingSpec"]
