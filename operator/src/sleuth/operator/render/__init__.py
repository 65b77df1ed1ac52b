"""Pure renderers: a validated spec in, the Kubernetes objects it stands for out. No I/O.

- :mod:`.model`: the vLLM Deployment and Service of an AgentDeployment that serves its model.
- :mod:`.agent`: the agent Deployment, Service and ConfigMap (the agent's configuration file).
- :mod:`.tool`: a ToolBinding's tool service Deployment, Service, ConfigMap and NetworkPolicy.
- :mod:`.evalschedule`: an EvalSchedule's CronJob (``sleuth eval ragas`` / ``tsa``).
- :mod:`.evalrules`: an EvalSchedule's PrometheusRule (score alerts with runbook links).

Every object carries the standard ``app.kubernetes.io/*`` labels and an ownerReference to the
custom resource it came from, and is complete: it is applied with server-side apply as is.
"""

from sleuth.operator.render.meta import Owner, RenderSettings

__all__ = ["Owner", "RenderSettings"]
