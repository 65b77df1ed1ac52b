"""Autoscaling of the model server (``spec.model.autoscaling``) and of the agent
(``spec.agent.autoscaling``).

sleuth scales through an existing engine, never by replica counts of its own: KEDA
``ScaledObject``s with Prometheus triggers (the model server on vLLM's
``vllm:num_requests_waiting``, woken from zero by the agent's waiting-for-model series; the agent
on its requests in flight), or, where the chart says KEDA is absent, an ``autoscaling/v2``
HorizontalPodAutoscaler for the agent. The operator then leaves ``spec.replicas`` of what a
scaler owns alone (docs/operator.md, "Autoscaling").

The same rules are here (pydantic) and in the CRD (CEL), each message naming its field.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.v1alpha1.common import SpecModel
from sleuth.core.names import AGENT_IN_FLIGHT, AGENT_WAITING_FOR_MODEL, VLLM_REQUESTS_WAITING

MAX_REPLICAS = 64
DEFAULT_MODEL_MAX_REPLICAS = 1
DEFAULT_TARGET_WAITING_REQUESTS = 4
DEFAULT_COOLDOWN_SECONDS = 600
DEFAULT_WAKE_WAIT_SECONDS = 30
DEFAULT_AGENT_MAX_REPLICAS = 4
DEFAULT_TARGET_IN_FLIGHT_REQUESTS = 16


def _min_max_rule(where: str) -> JsonValue:
    return {
        "rule": "self.minReplicas <= self.maxReplicas",
        "message": f"{where}.minReplicas must not exceed {where}.maxReplicas",
        "fieldPath": ".minReplicas",
    }


def _check_min_max(where: str, low: int, high: int) -> None:
    if low > high:
        raise ValueError(
            f"{where}.minReplicas ({low}) must not exceed {where}.maxReplicas ({high})"
        )


MODEL_WHERE = "spec.model.autoscaling"
AGENT_WHERE = "spec.agent.autoscaling"


class ModelAutoscalingSpec(SpecModel):
    """The model server's replicas follow its queue; with minReplicas 0 it sleeps when idle."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [_min_max_rule(MODEL_WHERE)]}
    )

    min_replicas: int = Field(
        default=0,
        ge=0,
        le=MAX_REPLICAS,
        description="Fewest model server replicas (default 0: scaled to zero when idle; a "
        "request then wakes it, and the agent waits up to wakeWaitSeconds or answers through "
        "its router, saying so).",
    )
    max_replicas: int = Field(
        default=DEFAULT_MODEL_MAX_REPLICAS,
        ge=1,
        le=MAX_REPLICAS,
        description="Most model server replicas (default "
        f"{DEFAULT_MODEL_MAX_REPLICAS}); each holds gpu.count GPUs.",
    )
    target_waiting_requests: int = Field(
        default=DEFAULT_TARGET_WAITING_REQUESTS,
        ge=1,
        le=10000,
        description=f"Requests queued per replica ({VLLM_REQUESTS_WAITING}, summed over the "
        "model server's pods) above which another replica is added (default "
        f"{DEFAULT_TARGET_WAITING_REQUESTS}).",
    )
    cooldown_seconds: int = Field(
        default=DEFAULT_COOLDOWN_SECONDS,
        ge=0,
        le=86400,
        description="How long the model server stays up after the last request before it is "
        f"scaled to minReplicas (default {DEFAULT_COOLDOWN_SECONDS}; KEDA's cooldownPeriod), "
        "and how long a replica added for a burst stays after it (the HPA's scale-down "
        "stabilization window).",
    )
    wake_wait_seconds: int = Field(
        default=DEFAULT_WAKE_WAIT_SECONDS,
        ge=0,
        le=3600,
        description="How long a request that finds the model server asleep waits for it "
        f"(counted in {AGENT_WAITING_FOR_MODEL}, the signal that wakes it) before the agent "
        "answers through its deterministic router, saying so (default "
        f"{DEFAULT_WAKE_WAIT_SECONDS}; 0: at once). Must be less than "
        "spec.agent.requestTimeoutSeconds.",
    )

    @model_validator(mode="after")
    def _check(self) -> ModelAutoscalingSpec:
        _check_min_max(MODEL_WHERE, self.min_replicas, self.max_replicas)
        return self


class AgentAutoscalingSpec(SpecModel):
    """The agent's replicas follow its requests in flight (never below one: it answers while
    the model server sleeps)."""

    model_config = ConfigDict(
        json_schema_extra={"x-kubernetes-validations": [_min_max_rule(AGENT_WHERE)]}
    )

    min_replicas: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICAS,
        description="Fewest agent replicas (default 1, at least 1: the agent is what answers "
        "and wakes the model server). Replaces spec.agent.replicas.",
    )
    max_replicas: int = Field(
        default=DEFAULT_AGENT_MAX_REPLICAS,
        ge=1,
        le=MAX_REPLICAS,
        description=f"Most agent replicas (default {DEFAULT_AGENT_MAX_REPLICAS}).",
    )
    target_in_flight_requests: int = Field(
        default=DEFAULT_TARGET_IN_FLIGHT_REQUESTS,
        ge=1,
        le=10000,
        description=f"Requests in flight per agent replica ({AGENT_IN_FLIGHT}) above which "
        f"another replica is added (default {DEFAULT_TARGET_IN_FLIGHT_REQUESTS}); keep it below "
        "maxConcurrentRequests, beyond which a replica answers 429.",
    )

    @model_validator(mode="after")
    def _check(self) -> AgentAutoscalingSpec:
        _check_min_max(AGENT_WHERE, self.min_replicas, self.max_replicas)
        return self


ENDPOINT_AUTOSCALING = (
    "spec.model.autoscaling scales the model server sleuth runs: it cannot be set with "
    "spec.model.endpoint (an existing server scales on its own)"
)
REPLICAS_AUTOSCALING = (
    "spec.model.replicas and spec.model.autoscaling: set one (the autoscaler owns the replicas)"
)
MODEL_RULES: list[JsonValue] = [
    {
        "rule": "!has(self.endpoint) || !has(self.autoscaling)",
        "message": ENDPOINT_AUTOSCALING,
        "fieldPath": ".autoscaling",
    },
    {
        "rule": "!has(self.replicas) || !has(self.autoscaling)",
        "message": REPLICAS_AUTOSCALING,
        "fieldPath": ".replicas",
    },
]
"""CEL of ``spec.model`` about autoscaling; pydantic's twin: :func:`autoscaling_problem` (and
:data:`ENDPOINT_AUTOSCALING` in the model's endpoint branch)."""


def autoscaling_problem(
    replicas: int | None, autoscaling: ModelAutoscalingSpec | None
) -> str | None:
    """The pydantic side of the ``replicas`` rule of :data:`MODEL_RULES`."""
    if autoscaling is not None and replicas is not None:
        return REPLICAS_AUTOSCALING
    return None


WAKE_RULE: JsonValue = {
    "rule": "!has(self.model.autoscaling) || !has(self.agent) || "
    "self.model.autoscaling.wakeWaitSeconds < self.agent.requestTimeoutSeconds",
    "message": "spec.model.autoscaling.wakeWaitSeconds must be less than "
    "spec.agent.requestTimeoutSeconds (the wait is part of the request)",
    "fieldPath": ".model.autoscaling.wakeWaitSeconds",
}
"""CEL of the whole spec: the wake wait fits in the request's timeout."""


def wake_problem(autoscaling: ModelAutoscalingSpec | None, request_timeout: int) -> str | None:
    """The pydantic side of :data:`WAKE_RULE`."""
    if autoscaling is not None and autoscaling.wake_wait_seconds >= request_timeout:
        return (
            f"spec.model.autoscaling.wakeWaitSeconds ({autoscaling.wake_wait_seconds}) must be "
            f"less than spec.agent.requestTimeoutSeconds ({request_timeout})"
        )
    return None


__all__ = [
    "ENDPOINT_AUTOSCALING",
    "MODEL_RULES",
    "REPLICAS_AUTOSCALING",
    "WAKE_RULE",
    "AgentAutoscalingSpec",
    "ModelAutoscalingSpec",
    "autoscaling_problem",
    "wake_problem",
]
