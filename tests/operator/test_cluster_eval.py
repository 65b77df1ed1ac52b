"""An EvalSchedule in the real control plane: its CronJob, the ServiceAccount, Role and
RoleBinding of its pods and its PrometheusRule appear with the expected fields; a Job can be made
from the CronJob (an Indexed one with parallelism); the pods' account may patch this schedule's
status and no other's; deleting the schedule removes them all; a bad cron, or TSA without the
team's cases, is refused by the apiserver; a missing TSA ConfigMap and a judge that is the agent's
own model are reported on the resource; without its AgentDeployment the children are removed and
the condition says why.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.operator.operator_testkit import OperatorProcess
from tests.support.golden import golden_configmap
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster

AGENT = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "bot"},
    "spec": {"model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}},
}
SCHEDULE = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "bot-nightly"},
    "spec": {
        "agentRef": {"name": "bot"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
        "metrics": ["faithfulness", "answerRelevancy", "toolSelectionAccuracy"],
        "toolSelection": {"configMapRef": {"name": "team-tsa", "key": "tsa.jsonl"}},
        "alerts": {"window": "2m", "for": "1m"},
    },
}
TSA_CASES = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "team-tsa"},
    "data": {
        "tsa.jsonl": '{"id": "t1", "query": "How many tickets?", "split": "test", '
        '"expected": [{"name": "tickets", "arguments": {}}]}\n'
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


SHARDED = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "bot-sharded"},
    "spec": {
        "agentRef": {"name": "bot"},
        "schedule": "*/30 * * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
        "metrics": ["faithfulness", "toolSelectionAccuracy"],
        "toolSelection": {"configMapRef": {"name": "team-tsa", "key": "tsa.jsonl"}},
        "parallelism": 3,
        "alerts": {"onlineScores": False, "staleAfter": "3h"},
    },
}


def _children(name: str) -> list[str]:
    return [
        f"cronjob/{name}-eval",
        f"serviceaccount/{name}-eval",
        f"role/{name}-eval",
        f"rolebinding/{name}-eval",
        f"prometheusrule/{name}-eval-alerts",
    ]


def _can(kube: Any, namespace: str, schedule: str, verb: str, what: str, *more: str) -> bool:
    """`kubectl auth can-i` as the ServiceAccount of ``schedule``'s pods."""
    sa = f"system:serviceaccount:{namespace}:{schedule}-eval"
    out = kube.kubectl(
        "auth", "can-i", verb, what, *more, f"--as={sa}", "-n", namespace, check=False
    )
    answer = out.stdout.strip()
    assert answer in ("yes", "no"), out.stderr
    return answer == "yes"


def _allowed(kube: Any, namespace: str, schedule: str, verb: str, what: str, *more: str) -> bool:
    """Wait until ``schedule``'s account may do it: the authorizer sees a new Role or
    RoleBinding through a cache, a moment after the write."""
    return eventually(
        lambda: _can(kube, namespace, schedule, verb, what, *more),
        60,
        f"{schedule} may {verb} {what} {' '.join(more)}",
    )


def _denied(kube: Any, namespace: str, schedule: str, verb: str, what: str, *more: str) -> bool:
    """Wait until ``schedule``'s account may not do it (a deleted RoleBinding, through the
    same cache)."""
    return eventually(
        lambda: not _can(kube, namespace, schedule, verb, what, *more),
        60,
        f"{schedule} may no longer {verb} {what} {' '.join(more)}",
    )


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
    _apply(kube, namespace, golden_configmap())
    _apply(kube, namespace, SCHEDULE)
    eventually(
        lambda: _reason(kube, namespace) == "AgentNotFound", what="Ready=False AgentNotFound"
    )
    assert _get(kube, namespace, "cronjob/bot-nightly-eval") is None
    _apply(kube, namespace, AGENT)
    # The team's TSA cases are not there yet: the condition names the field.
    eventually(
        lambda: _reason(kube, namespace) == "DatasetNotFound", what="Ready=False DatasetNotFound"
    )
    missing = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Ready")
    assert missing is not None
    assert missing["message"] == (
        f"spec.toolSelection.configMapRef.name: ConfigMap team-tsa not found in {namespace}"
    )
    _apply(kube, namespace, TSA_CASES)

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
    assert args[args.index("--judge-url") + 1] == "http://vllm.models.svc:8000/v1"
    # TSA: the team's cases, with the agent's own first step read from the agent's Service.
    tsa = containers[1]
    assert tsa["name"] == "tsa"
    assert tsa["args"][tsa["args"].index("--cases") + 1] == "/var/lib/sleuth/tsa/tsa.jsonl"
    agent_url = tsa["args"][tsa["args"].index("--agent-url") + 1]
    assert agent_url == f"http://bot-agent.{namespace}.svc:8080"
    volumes = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
    (cases,) = [v for v in volumes if v["name"] == "tsa-cases"]
    assert cases["configMap"]["name"] == "team-tsa"

    rule = eventually(
        lambda: _found(kube, namespace, "prometheusrule/bot-nightly-eval-alerts"),
        what="the PrometheusRule",
    )
    rules = {
        r["alert"]: r for r in rule["spec"]["groups"][0]["rules"] if "source" not in r["labels"]
    }
    assert rules["RAGFaithfulnessLow"]["expr"] == (
        f'avg_over_time(rag_faithfulness_score{{namespace="{namespace}", agent="bot", '
        'eval_schedule="bot-nightly", source!="online"}[2m]) < 0.8'
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
    assert job["spec"].get("completionMode", "NonIndexed") == "NonIndexed"
    _check_reporting(kube, namespace, cronjob, rules)
    _check_sharded_schedule(kube, namespace)
    _check_judge_warning(kube, namespace)

    # Without its agent, nothing is scheduled and the condition names the missing agent.
    kube.kubectl("delete", "agentdeployment/bot", "-n", namespace)
    eventually(
        lambda: all(_get(kube, namespace, what) is None for what in _children("bot-nightly")),
        what="the CronJob, ServiceAccount, Role, RoleBinding and PrometheusRule pruned",
    )

    def agent_not_found() -> dict[str, Any]:
        cond = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "Ready")
        return cond if cond and cond["reason"] == "AgentNotFound" else {}

    gone = eventually(agent_not_found, what="Ready=False AgentNotFound")
    assert "bot" in gone["message"]


def _check_judge_warning(kube: Any, namespace: str) -> None:
    """No spec.judge: the agent's model grades itself, said by a condition and a Warning Event;
    another judge clears it."""
    cond = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "JudgeIndependent")
    assert cond is not None
    assert (cond["status"], cond["reason"]) == ("False", "JudgeIsAgentModel")
    assert "llama at http://vllm.models.svc:8000/v1" in cond["message"]

    def warned() -> list[dict[str, Any]]:
        events = _found(kube, namespace, "events")
        return [
            e
            for e in events.get("items", [])
            if e["reason"] == "JudgeIsAgentModel" and e["involvedObject"]["name"] == "bot-nightly"
        ]

    (event,) = eventually(warned, what="a Warning Event JudgeIsAgentModel")
    assert event["type"] == "Warning"
    judged = json.loads(json.dumps(SCHEDULE))
    judged["spec"]["judge"] = {"endpoint": "http://judge.models.svc:8000/v1", "model": "qwen"}
    _apply(kube, namespace, judged)

    def separate() -> dict[str, Any]:
        got = _condition(_get(kube, namespace, "evalschedule/bot-nightly"), "JudgeIndependent")
        return got if got and got["status"] == "True" else {}

    assert eventually(separate, what="JudgeIndependent=True")["reason"] == "SeparateJudge"


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
    # TSA is scored on the team's own cases: without them the apiserver refuses it.
    no_cases = json.loads(json.dumps(SCHEDULE))
    del no_cases["spec"]["toolSelection"]
    out = _apply(kube, namespace, no_cases, check=False)
    assert out.returncode != 0
    assert "spec.toolSelection: toolSelectionAccuracy is scored on your own cases" in out.stderr
    unused = json.loads(json.dumps(SCHEDULE))
    unused["spec"]["metrics"] = ["faithfulness"]
    out = _apply(kube, namespace, unused, check=False)
    assert out.returncode != 0
    assert "toolSelectionAccuracy is not in spec.metrics" in out.stderr


def test_discovery_tells_whether_prometheus_rules_are_served(kube: Any) -> None:
    """The check behind PrometheusRuleUnsupported, against the real apiserver's discovery."""
    from sleuth.core.kube import PROMETHEUS_RULE, Kube, Resource

    api = Kube(kube.api)
    assert api.serves(PROMETHEUS_RULE)  # the test control plane installs its CRD
    assert not api.serves(Resource("example.invalid/v1", "Nothing", "nothings"))
    assert not api.serves(Resource("monitoring.coreos.com/v1", "Nothing", "nothings"))


def _check_reporting(
    kube: Any, namespace: str, cronjob: dict[str, Any], rules: dict[str, Any]
) -> None:
    """The pods report as ``bot-nightly-eval``, which may patch this schedule's status only."""
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "bot-nightly-eval"
    assert pod["automountServiceAccountToken"] is True
    for container in pod["containers"]:
        env = {e["name"]: e for e in container["env"]}
        assert env["SLEUTH_EVAL_STATUS"]["value"] == f"{namespace}/bot-nightly"
        assert env["SLEUTH_EVAL_EXPECT_PARTS"]["value"] == "2"  # ragas + tsa, one pod
        field = env["SLEUTH_EVAL_RUN_ID"]["valueFrom"]["fieldRef"]["fieldPath"]
        assert field == "metadata.labels['batch.kubernetes.io/job-name']"
    for what in _children("bot-nightly"):
        obj = eventually(lambda what=what: _found(kube, namespace, what), what=what)
        (ref,) = obj["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == (
            "EvalSchedule",
            "bot-nightly",
            True,
        )
    role = _found(kube, namespace, "role/bot-nightly-eval")
    assert {tuple(r["resources"]): r["resourceNames"] for r in role["rules"]} == {
        ("evalschedules",): ["bot-nightly"],
        ("evalschedules/status",): ["bot-nightly"],
    }
    binding = _found(kube, namespace, "rolebinding/bot-nightly-eval")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "bot-nightly-eval", "namespace": namespace}
    ]
    # The other alerts: failing, stale after two days (runs daily), online twins.
    assert rules["RAGEvalFailing"]["expr"] == (
        f'sleuth_eval_last_run_failed{{namespace="{namespace}", agent="bot", '
        'eval_schedule="bot-nightly"} == 1'
    )
    assert rules["RAGEvalStale"]["expr"].endswith("} > 172800")
    full = _found(kube, namespace, "prometheusrule/bot-nightly-eval-alerts")
    online = [r for r in full["spec"]["groups"][0]["rules"] if r["labels"].get("source")]
    assert sorted(r["alert"] for r in online) == ["RAGAnswerRelevancyLow", "RAGFaithfulnessLow"]

    status = "evalschedules.sleuth.dev/bot-nightly"
    assert _allowed(kube, namespace, "bot-nightly", "patch", status, "--subresource=status")
    assert _can(kube, namespace, "bot-nightly", "get", status, "--subresource=status")
    assert _can(kube, namespace, "bot-nightly", "get", status)
    assert not _can(kube, namespace, "bot-nightly", "patch", status)  # the spec: no
    assert not _can(kube, namespace, "bot-nightly", "list", "evalschedules.sleuth.dev")
    assert not _can(kube, namespace, "bot-nightly", "get", "secrets")
    assert not _can(kube, namespace, "bot-nightly", "patch", "agentdeployments.sleuth.dev/bot")


def _check_sharded_schedule(kube: Any, namespace: str) -> None:
    """parallelism 3 makes Indexed Jobs; each schedule's account is its own; delete cleans up."""
    _apply(kube, namespace, SHARDED)
    cronjob = eventually(
        lambda: _found(kube, namespace, "cronjob/bot-sharded-eval"), what="the sharded CronJob"
    )
    for container in cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]:
        args = container["args"]
        assert args[args.index("--shard") + 1] == "$(JOB_COMPLETION_INDEX)/3"
        env = {e["name"]: e for e in container["env"]}
        assert env["SLEUTH_EVAL_EXPECT_PARTS"]["value"] == "6"  # 2 containers x 3 pods
    kube.kubectl("create", "job", "--from=cronjob/bot-sharded-eval", "sharded-run", "-n", namespace)
    job = _found(kube, namespace, "job/sharded-run")
    assert (job["spec"]["completionMode"], job["spec"]["completions"]) == ("Indexed", 3)
    assert job["spec"]["parallelism"] == 3
    rule = eventually(
        lambda: _found(kube, namespace, "prometheusrule/bot-sharded-eval-alerts"),
        what="the sharded schedule's rules",
    )
    rules = rule["spec"]["groups"][0]["rules"]
    assert not [r for r in rules if r["labels"].get("source") == "online"]  # onlineScores false
    stale = next(r for r in rules if r["alert"] == "RAGEvalStale")
    assert stale["expr"].endswith("} > 10800")  # staleAfter 3h
    eventually(
        lambda: _get(kube, namespace, "rolebinding/bot-sharded-eval") is not None,
        what="the sharded schedule's RoleBinding",
    )

    # Each schedule's pods may write their own schedule's status, not the other's.
    sub = "--subresource=status"
    assert _allowed(kube, namespace, "bot-sharded", "patch", "evalschedules/bot-sharded", sub)
    assert not _can(kube, namespace, "bot-sharded", "patch", "evalschedules/bot-nightly", sub)
    assert not _can(kube, namespace, "bot-nightly", "patch", "evalschedules/bot-sharded", sub)

    kube.kubectl("delete", "evalschedule/bot-sharded", "-n", namespace)

    def all_gone() -> bool:
        return all(_get(kube, namespace, what) is None for what in _children("bot-sharded"))

    eventually(all_gone, what="the deleted schedule's children removed")
    assert _denied(kube, namespace, "bot-sharded", "patch", "evalschedules/bot-sharded", sub)
    assert _get(kube, namespace, "rolebinding/bot-nightly-eval") is not None  # the other stays
