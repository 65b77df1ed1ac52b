"""The autoscalers of an AgentDeployment: KEDA ScaledObjects, or an autoscaling/v2 HPA.

sleuth renders the objects of an existing engine and never scales anything itself; once a scaler
owns a Deployment the renderers leave its ``spec.replicas`` out (:func:`model_replicas`,
:func:`agent_replicas`), so the operator and the scaler never write the same field.

**With KEDA** (the chart's ``autoscaling.engine: keda``, the default), each scaled Deployment gets
a ``ScaledObject`` (``keda.sh/v1alpha1``) of the same name with Prometheus triggers, queried at the
chart's ``autoscaling.prometheusAddress``:

- the model server (``spec.model.autoscaling``): ``queue``, vLLM's ``vllm:num_requests_waiting``
  summed over its pods, one replica per ``targetWaitingRequests``; ``wake``, the agent's
  ``sleuth_agent_requests_waiting_for_model`` (requests that found it asleep), counted the same
  way — the signal that brings it from zero to one, since a sleeping server exports nothing;
  ``busy``, ``vllm:num_requests_running``, whose threshold is so high that it never adds a
  replica: it only keeps one awake while requests run without queueing. ``cooldownPeriod`` is
  ``cooldownSeconds``: after the last active reading, KEDA scales to ``minReplicas`` (0 allowed).
  KEDA's operator itself only moves 0 ↔ 1; from 1 to ``maxReplicas`` the HorizontalPodAutoscaler
  KEDA makes does it, reading the triggers through KEDA's metrics apiserver
  (``external.metrics.k8s.io``). Its scale-down stabilization window is ``cooldownSeconds`` too
  (``advanced.horizontalPodAutoscalerConfig.behavior``), so each replica added for a burst stays
  as long as the last one would, not the HPA's fixed 5 minutes.
- the agent (``spec.agent.autoscaling``): ``in-flight``, ``sleuth_agent_requests_in_flight``
  summed over its pods, one replica per ``targetInFlightRequests``.

**Without KEDA** (``autoscaling.engine: hpa``), the agent gets a HorizontalPodAutoscaler on the
per-pod series ``sleuth_agent_requests_in_flight`` (served to the HPA by a custom metrics adapter,
e.g. prometheus-adapter); the model server is not autoscaled (a Deployment cannot sleep at zero
without KEDA or the HPAScaleToZero feature gate): it runs ``max(1, minReplicas)`` replicas, and
the status says so.

Series are selected by the labels a prometheus-operator ServiceMonitor gives its targets
(``namespace``, ``service``: the chart's ``metrics.serviceMonitor``) and by the agent's own
``agent`` label.
"""

from __future__ import annotations

from typing import Literal

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.model import ModelSpec
from sleuth.core.names import (
    AGENT_IN_FLIGHT,
    AGENT_LABEL,
    AGENT_WAITING_FOR_MODEL,
    VLLM_REQUESTS_RUNNING,
    VLLM_REQUESTS_WAITING,
)
from sleuth.operator.render.meta import Component, Manifest, Owner, RenderSettings, metadata

Engine = Literal["keda", "hpa"]
ENGINES: tuple[Engine, ...] = ("keda", "hpa")
KEDA_API_VERSION = "keda.sh/v1alpha1"
POLLING_SECONDS = 15  # KEDA's default pollingInterval, stated so the docs can name it
KEEP_AWAKE_THRESHOLD = 1_000_000
"""The ``busy`` trigger's requests per replica: never reached, so it never adds a replica; any
running request keeps the model server above zero."""


def model_scaled(spec: ModelSpec, settings: RenderSettings) -> bool:
    """Whether a scaler owns the model server's replicas (KEDA only)."""
    return spec.serves and spec.autoscaling is not None and settings.autoscaler == "keda"


def agent_scaled(spec: AgentDeploymentSpec) -> bool:
    """Whether a scaler (KEDA's or an HPA) owns the agent's replicas."""
    return spec.agent.autoscaling is not None


def model_replicas(spec: ModelSpec, settings: RenderSettings) -> int | None:
    """The model Deployment's ``spec.replicas``: None (left out) when a scaler owns it."""
    scaling = spec.autoscaling
    if scaling is None:
        return 1 if spec.replicas is None else spec.replicas
    if model_scaled(spec, settings):
        return None
    return max(1, scaling.min_replicas)  # no KEDA: fixed, never asleep


def agent_replicas(spec: AgentDeploymentSpec) -> int | None:
    """The agent Deployment's ``spec.replicas``: None (left out) when a scaler owns it."""
    return None if agent_scaled(spec) else spec.agent.replicas


def _selector(**labels: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def model_queries(owner: Owner, model_service: str) -> dict[str, str]:
    """The PromQL of the model server's triggers, by trigger name."""
    pods = _selector(namespace=owner.namespace, service=model_service)
    agent = _selector(namespace=owner.namespace, **{AGENT_LABEL: owner.name})
    return {
        "queue": f"sum({VLLM_REQUESTS_WAITING}{pods})",
        "wake": f"sum({AGENT_WAITING_FOR_MODEL}{agent})",
        "busy": f"sum({VLLM_REQUESTS_RUNNING}{pods})",
    }


def agent_query(owner: Owner) -> str:
    """The PromQL of the agent's trigger."""
    agent = _selector(namespace=owner.namespace, **{AGENT_LABEL: owner.name})
    return f"sum({AGENT_IN_FLIGHT}{agent})"


def _trigger(name: str, query: str, threshold: int, settings: RenderSettings) -> Manifest:
    return {
        "type": "prometheus",
        "name": name,
        "metadata": {
            "serverAddress": settings.prometheus_address,
            "query": query,
            "threshold": str(threshold),
            "activationThreshold": "0",
            "ignoreNullValues": "true",
        },
    }


def _scaled_object(
    owner: Owner,
    target: str,
    component: Component,
    bounds: tuple[int, int],
    triggers: list[Manifest],
    cooldown: int | None = None,
) -> Manifest:
    spec: Manifest = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
        "minReplicaCount": bounds[0],
        "maxReplicaCount": bounds[1],
        "pollingInterval": POLLING_SECONDS,
        "triggers": triggers,
    }
    if cooldown is not None:
        spec["cooldownPeriod"] = cooldown
        spec["advanced"] = {
            "horizontalPodAutoscalerConfig": {
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": cooldown}}
            }
        }
    return {
        "apiVersion": KEDA_API_VERSION,
        "kind": "ScaledObject",
        "metadata": metadata(target, owner, component, owner.name),
        "spec": spec,
    }


def model_scaler(
    owner: Owner, spec: AgentDeploymentSpec, target: str, settings: RenderSettings
) -> list[Manifest]:
    """The model server's ScaledObject (``target``: its Deployment and Service); none unless
    KEDA scales it."""
    scaling = spec.model.autoscaling
    if scaling is None or not model_scaled(spec.model, settings):
        return []
    queries = model_queries(owner, target)
    per_replica = scaling.target_waiting_requests
    triggers = [
        _trigger("queue", queries["queue"], per_replica, settings),
        _trigger("wake", queries["wake"], per_replica, settings),
        _trigger("busy", queries["busy"], KEEP_AWAKE_THRESHOLD, settings),
    ]
    bounds = (scaling.min_replicas, scaling.max_replicas)
    return [_scaled_object(owner, target, "model", bounds, triggers, scaling.cooldown_seconds)]


def agent_scaler(
    owner: Owner, spec: AgentDeploymentSpec, target: str, settings: RenderSettings
) -> list[Manifest]:
    """The agent's ScaledObject, or its HorizontalPodAutoscaler without KEDA; none unless
    ``spec.agent.autoscaling`` is set."""
    scaling = spec.agent.autoscaling
    if scaling is None:
        return []
    bounds = (scaling.min_replicas, scaling.max_replicas)
    per_replica = scaling.target_in_flight_requests
    if settings.autoscaler == "keda":
        trigger = _trigger("in-flight", agent_query(owner), per_replica, settings)
        return [_scaled_object(owner, target, "agent", bounds, [trigger])]
    hpa: Manifest = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": metadata(target, owner, "agent", owner.name),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": bounds[0],
            "maxReplicas": bounds[1],
            "metrics": [
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": AGENT_IN_FLIGHT},
                        "target": {"type": "AverageValue", "averageValue": str(per_replica)},
                    },
                }
            ],
        },
    }
    return [hpa]


__all__ = [
    "ENGINES",
    "KEDA_API_VERSION",
    "KEEP_AWAKE_THRESHOLD",
    "POLLING_SECONDS",
    "Engine",
    "agent_query",
    "agent_replicas",
    "agent_scaled",
    "agent_scaler",
    "model_queries",
    "model_replicas",
    "model_scaled",
    "model_scaler",
]
