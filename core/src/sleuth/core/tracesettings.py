"""The settings of traces, read from the standard ``OTEL_*`` variables (see
:mod:`sleuth.core.tracing` for the list): :class:`TracingSettings`, built once at the command
line's edge with :meth:`TracingSettings.from_env`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from sleuth.core.errors import ConfigError

SAMPLERS = (
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio",
)
CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

# Receives (number of spans, reason) for spans that will never reach the collector.
DropCounter = Callable[[int, str], None]


def _pairs(text: str, name: str) -> dict[str, str]:
    """``key=value,key=value`` (values percent-decoded), as the OTel variables write them."""
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{name}: {item.strip()!r} is not key=value")
        out[key.strip()] = unquote(value.strip())
    return out


def _number(env: Mapping[str, str], name: str, default: float, minimum: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not a number") from None
    if value < minimum:
        raise ConfigError(f"{name}: {raw} is below {minimum:g}")
    return value


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """What the tracer is built from; :meth:`from_env` reads the standard variables."""

    endpoint: str | None = None
    service_name: str = "sleuth"
    sampler: str = "parentbased_always_on"
    sampler_arg: float = 1.0
    resource_attributes: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    capture_content: bool = False
    export_timeout_s: float = 10.0
    max_queue_size: int = 2048
    max_export_batch_size: int = 512
    schedule_delay_s: float = 1.0

    @property
    def enabled(self) -> bool:
        return self.endpoint is not None

    @classmethod
    def from_env(cls, env: Mapping[str, str], default_service_name: str) -> TracingSettings:
        """The settings the ``OTEL_*`` variables of ``env`` give (see the module's docstring);
        a value that cannot be used raises :class:`ConfigError` naming the variable."""
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or None
        if endpoint is None and (base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()):
            endpoint = base.rstrip("/") + "/v1/traces"
        if endpoint is not None and not endpoint.startswith(("http://", "https://")):
            raise ConfigError(f"OTEL_EXPORTER_OTLP_ENDPOINT: {endpoint!r} is not an http(s) URL")
        sampler = env.get("OTEL_TRACES_SAMPLER", "").strip().lower() or "parentbased_always_on"
        if sampler not in SAMPLERS:
            raise ConfigError(
                f"OTEL_TRACES_SAMPLER: {sampler!r} is not one of {', '.join(SAMPLERS)}"
            )
        ratio = _number(env, "OTEL_TRACES_SAMPLER_ARG", 1.0, 0.0)
        if "traceidratio" in sampler and ratio > 1.0:
            raise ConfigError(f"OTEL_TRACES_SAMPLER_ARG: {ratio:g} is not a ratio in [0, 1]")
        resource = _pairs(env.get("OTEL_RESOURCE_ATTRIBUTES", ""), "OTEL_RESOURCE_ATTRIBUTES")
        service = env.get("OTEL_SERVICE_NAME", "").strip() or resource.pop("service.name", "")
        capture = env.get(CAPTURE_CONTENT_ENV, "").strip().lower()
        if capture not in ("", "true", "false"):
            raise ConfigError(f"{CAPTURE_CONTENT_ENV}: {capture!r} is not true or false")
        return cls(
            endpoint=endpoint,
            service_name=service or default_service_name,
            sampler=sampler,
            sampler_arg=ratio,
            resource_attributes=resource,
            headers=_pairs(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""), "OTEL_EXPORTER_OTLP_HEADERS"),
            capture_content=capture == "true",
            export_timeout_s=_number(env, "OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 1) / 1000,
            max_queue_size=int(_number(env, "OTEL_BSP_MAX_QUEUE_SIZE", 2048, 1)),
            max_export_batch_size=int(_number(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512, 1)),
            schedule_delay_s=_number(env, "OTEL_BSP_SCHEDULE_DELAY", 1000, 1) / 1000,
        )


__all__ = ["CAPTURE_CONTENT_ENV", "SAMPLERS", "DropCounter", "TracingSettings"]
