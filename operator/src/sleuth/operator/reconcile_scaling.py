"""What an AgentDeployment's status says about its replicas and its autoscalers.

``status.modelReplicas`` / ``modelDesiredReplicas`` and ``agentReplicas`` /
``agentDesiredReplicas`` are read from the Deployments (available, and ``spec.replicas`` as the
spec or its scaler set it: ``kubectl get agentdeployments`` shows them). With
``spec.model.autoscaling`` the condition ``ModelScaledToZero`` says whether the model server
sleeps: a request then wakes it (render/autoscale.py), and the agent answers meanwhile.
"""

from __future__ import annotations

from sleuth.operator.loop.rollout import Rollout
from sleuth.operator.render.meta import RenderSettings
from sleuth.operator.status import Cond

SCALED_TO_ZERO = "ModelScaledToZero"


def replica_counts(model: Rollout | None, agent: Rollout) -> dict[str, int | None]:
    """The status' replica fields (None: not known, left out); ``model`` None without a
    model server of ours."""
    counts: dict[str, int | None] = {
        "agentReplicas": agent.available if agent.exists else None,
        "agentDesiredReplicas": agent.desired if agent.exists else None,
    }
    if model is not None and model.exists:
        counts |= {"modelReplicas": model.available, "modelDesiredReplicas": model.desired}
    return counts


def scaled_to_zero_condition(model: Rollout, settings: RenderSettings) -> Cond:
    """``ModelScaledToZero`` of an autoscaled model server (``model``: its Deployment)."""
    if settings.autoscaler != "keda":
        return Cond(
            SCALED_TO_ZERO,
            "False",
            "KedaAbsent",
            "the chart's autoscaling.engine is hpa: without KEDA the model server is not "
            "autoscaled and runs spec.model.autoscaling.minReplicas replicas (at least 1)",
        )
    if model.exists and model.desired == 0:
        return Cond(
            SCALED_TO_ZERO,
            "True",
            "ScaledToZero",
            f"Deployment {model.name} is scaled to zero by its ScaledObject: the next request "
            "that needs it wakes it, and the agent answers meanwhile",
        )
    return Cond(
        SCALED_TO_ZERO,
        "False",
        "ModelAwake",
        f"Deployment {model.name} has replicas; its ScaledObject scales it with its queue, and "
        "to spec.model.autoscaling.minReplicas after cooldownSeconds without requests",
    )


__all__ = ["SCALED_TO_ZERO", "replica_counts", "scaled_to_zero_condition"]
