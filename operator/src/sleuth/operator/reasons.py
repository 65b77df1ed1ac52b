"""Every condition reason the operator can write, in one place (docs/operator.md, "Conditions and
reasons", explains each; the runbooks name only these).

The reconcilers write them as literals or module constants; ``tests/operator/test_reasons.py``
reads every ``Cond(...)`` in the operator's code and fails when one writes a reason that is not
here, or when one here is never written. The runbook test (``tests/operator/test_runbook_names.py``)
checks every reason a runbook names against this table.
"""

from __future__ import annotations

REASONS: dict[str, str] = {
    "Ready": "Ready=True: serving",
    "ModelNotReady": "Ready=False: the model server does not serve",
    "AgentNotReady": "Ready=False: the agent does not serve (or waits for its ToolBindings)",
    "ToolServiceNotReady": "Ready=False: the tool service does not serve",
    "SecretNotFound": "Ready=False, Degraded=True: a referenced Secret or key is missing",
    "SecretUnverifiable": "Ready=False, Degraded=True: the operator may not read a referenced "
    "Secret, so it cannot tell whether the Secret opted in: not rendered",
    "SecretNotAllowed": "Ready=False, Degraded=True: a referenced Secret does not opt in to that "
    "use (annotation sleuth.dev/allowed-uses): not rendered",
    "EndpointNotAllowed": "Ready=False, Degraded=True: a spec endpoint is outside the allowlists",
    "ImageNotAllowed": "Ready=False, Degraded=True: a spec image is outside the allowlists",
    "ChildConflict": "Ready=False, Degraded=True: an object with a child's name is someone "
    "else's; left alone",
    "AgentNotFound": "Ready=False, Degraded=True: spec.agentRef.name names no AgentDeployment",
    "ToolNameConflict": "Ready=False, Degraded=True: an older ToolBinding gives the same name",
    "InvalidSpec": "Ready=False, Degraded=True: the spec fails the operator's checks",
    "ChildRejected": "Ready=False, Degraded=True: the apiserver refused a child",
    "DatasetNotFound": "Ready=False, Degraded=True: the golden dataset's or the TSA cases' "
    "ConfigMap or key is missing",
    "RollingOut": "Progressing=True: a child Deployment rolls out",
    "AwaitingToolBindings": "Progressing=True: a new agent waits for its ToolBindings",
    "Complete": "Progressing=False: no rollout in progress",
    "ProgressDeadlineExceeded": "Progressing=False, Degraded=True: a rollout made no progress",
    "ReplicaFailure": "Degraded=True: a child's ReplicaSet cannot create its pods",
    "ToolsNotReady": "Degraded=True: some bound tool services are not ready",
    "AsExpected": "Degraded=False: nothing missing",
    "APIServerUnknown": "Degraded=True: the agent admits ServiceAccount tokens but the operator "
    "does not know the API server's addresses, so its NetworkPolicy cannot admit the cluster's "
    "JWKS: those callers are refused where policies are enforced",
    "Scheduled": "Ready=True: the eval CronJob is applied",
    "Suspended": "Ready=True: the eval CronJob is applied and suspended",
    "ModelEndpointUnknown": "Ready=False, Degraded=True: the agent's model endpoint is unknown",
    "EvalAccessForbidden": "Ready=False, Degraded=True: the eval pods' RBAC was refused",
    "PrometheusRuleUnsupported": "Degraded=True: PrometheusRule is not served here",
    "JudgeIsAgentModel": "JudgeIndependent=False: an EvalSchedule's judge is the agent's own "
    "model, grading its own answers",
    "SeparateJudge": "JudgeIndependent=True: an EvalSchedule's judge is another model",
    "ScaledToZero": "ModelScaledToZero=True: the model server sleeps at zero replicas; a "
    "request wakes it",
    "ModelAwake": "ModelScaledToZero=False: the autoscaled model server has replicas",
    "KedaAbsent": "ModelScaledToZero=False: the chart's autoscaling.engine is hpa, so the model "
    "server is not autoscaled",
}

__all__ = ["REASONS"]
