"""An EvalSchedule in the real control plane: its CronJob and PrometheusRule appear with the
expected fields, a Job can be made from the CronJob, a bad cron is refused by the apiserver, and
without its AgentDeployment the children are removed and the condition says why.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from operator_testkit import OperatorProcess, eventually

pytestmark = pytest.mark.cluster

AGENT = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "bot"},
    "spec": {"model": {"endpoint": "http://vllm.models:8000/v1", "servedModelName": "llama"}},
}
SCHEDULE = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "bot-nightly"},
    "spec": {
        "agentRef": {"name": "bot"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
        "alerts": {"window": "2m", "for": "1m"},
    },
}


def _apply(kube: Any, namespace: str, doc: dict[str, Any], check: bool = True) -> Any:
    return kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc), check=check)


def _get(kube: Any, namespace: str, what: str) -> dict[str, Any] | None:
    out = kube.kubectl("get", what, "-n", namespace, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


def _found(kube: Any, namespace: str, what: str) -> dict[str, Any]:
    """The object, or an empty (falsy) dict while it does not exist."""
    return _get(kube, namespace, what) or {}


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return dict(cond)
    return None


def _reason(kube: Any, namespace: str) -> str:
    cond = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Ready")
    return str(cond["reason"]) if cond else ""


def test_eval_schedule_renders_its_cronjob_and_rule(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/evalschedules.sleuth.dev"
    )
    # Before its agent exists, the schedule runs nothing and says why; the agent heals it.
    _apply(kube, namespace, SCHEDULE)
    eventually(
        lambda: _reason(kube, namespace) == "AgentNotFound", what="Ready=False AgentNotFound"
    )
    assert _get(kube, namespace, "cronjob/bot-nightly-eval") is None
    _apply(kube, namespace, AGENT)

    cronjob = eventually(
        lambda: _found(kube, namespace, "cronjob/bot-nightly-eval"), what="the CronJob"
    )
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert cronjob["spec"]["schedule"] == "0 3 * * *"
    owner = cronjob["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("EvalSchedule", "bot-nightly")
    containers = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = containers[0]["args"]
    assert args[args.index("--agent-url") + 1] == f"http://bot-agent.{namespace}.svc:8080"
    assert args[args.index("--judge-url") + 1] == "http://vllm.models:8000/v1"

    rule = eventually(
        lambda: _found(kube, namespace, "prometheusrule/bot-nightly-eval-alerts"),
        what="the PrometheusRule",
    )
    rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    assert rules["RAGFaithfulnessLow"]["expr"] == (
        f'avg_over_time(rag_faithfulness_score{{namespace="{namespace}", agent="bot", '
        'eval_schedule="bot-nightly"}[2m]) < 0.8'
    )
    assert rules["RAGFaithfulnessLow"]["for"] == "1m"

    def ready() -> dict[str, Any]:
        cond = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Ready")
        return cond if cond and cond["status"] == "True" else {}

    assert eventually(ready, what="Ready=True")["reason"] == "Scheduled"
    degraded = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Degraded")
    assert degraded is not None
    assert degraded["status"] == "False"

    kube.kubectl("create", "job", "--from=cronjob/bot-nightly-eval", "manual-run", "-n", namespace)
    job = _get(kube, namespace, "job/manual-run")
    assert job is not None
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == args

    # Without its agent, nothing is scheduled and the condition names the missing agent.
    kube.kubectl("delete", "agentdeployment/bot", "-n", namespace)
    eventually(
        lambda: _get(kube, namespace, "cronjob/bot-nightly-eval") is None,
        what="the CronJob pruned",
    )

    def agent_not_found() -> dict[str, Any]:
        cond = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Ready")
        return cond if cond and cond["reason"] == "AgentNotFound" else {}

    gone = eventually(agent_not_found, what="Ready=False AgentNotFound")
    assert "bot" in gone["message"]


def test_bad_cron_is_refused_by_the_apiserver(kube: Any, namespace: str, crds: None) -> None:
    kube.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/evalschedules.sleuth.dev"
    )
    bad = json.loads(json.dumps(SCHEDULE))
    bad["spec"]["schedule"] = "0 3 * *"
    out = _apply(kube, namespace, bad, check=False)
    assert out.returncode != 0
    assert "spec.schedule" in out.stderr
    both = json.loads(json.dumps(SCHEDULE))
    both["spec"]["dataset"]["persistentVolumeClaim"] = {"claimName": "evals", "path": "g.jsonl"}
    out = _apply(kube, namespace, both, check=False)
    assert out.returncode != 0
    assert "exactly one of configMapRef and persistentVolumeClaim" in out.stderr


def test_discovery_tells_whether_prometheus_rules_are_served(kube: Any) -> None:
    """The check behind PrometheusRuleUnsupported, against the real apiserver's discovery."""
    from sleuth.operator.kube import PROMETHEUS_RULE, Kube, Resource

    api = Kube(kube.api)
    assert api.serves(PROMETHEUS_RULE)  # the test control plane installs its CRD
    assert not api.serves(Resource("example.invalid/v1", "Nothing", "nothings"))
    assert not api.serves(Resource("monitoring.coreos.com/v1", "Nothing", "nothings"))
