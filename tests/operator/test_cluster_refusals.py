"""What passes admission but cannot work is reported on the resource, with the field named; what
the apiserver refuses of a rendered child is on the owner too; drift the operator cannot apply
over is repaired; the scheduler's reason for a pending model pod reaches the condition.

The table :data:`CASES` is the reconcile-time half of the invalid-manifest suite
(tests/operator/test_cluster_invalid.py holds what the apiserver refuses at admission): each row
is a manifest, the kind and name that must report it, the reason, and the text (the field) the
message must hold.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from tests.operator.operator_testkit import OperatorProcess, example
from tests.support.paths import EXAMPLES
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster

AGENT = example("AgentDeployment", "contracts")[0]
SQL = example("ToolBinding", "contracts-sql")[0]
EVAL = example("EvalSchedule", "contracts-weekly")[0]


def _named(doc: dict[str, Any], object_name: str, **spec: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": object_name}
    doc["spec"].update(spec)
    return doc


def _template(name: str, sql: str, parameters: list[dict[str, str]] | None = None) -> Any:
    return {
        "name": name,
        "description": f"{name}. NOT for anything else.",
        "sql": sql,
        "parameters": parameters or [],
    }


def _sql(name: str, *templates: dict[str, Any]) -> dict[str, Any]:
    """A sql_query binding named ``name`` (its tool name too, ``-`` as ``_``) with templates."""
    doc = _named(SQL, name.replace("_", "-"), name=name.replace("-", "_"))
    doc["spec"]["sqlQuery"] = {**doc["spec"]["sqlQuery"], "templates": list(templates)}
    return doc


def _eval(name: str, **spec: Any) -> dict[str, Any]:
    return _named(EVAL, name, **spec)


# 64 templates of ~18 KB: the binding fits etcd (1.5 MiB), its tool ConfigMap not (1 MiB).
BIG = _sql(
    "big_sql",
    *[
        {
            **_template(f"t{i}", "SELECT id FROM contracts WHERE title <> '" + "x" * 16000 + "'"),
            "description": f"Template {i}. " + "NOT for anything else. " * 90,
        }
        for i in range(64)
    ],
)
assert 1_048_576 < len(yaml.safe_dump(BIG)) < 1_400_000

# (case, manifest, kind, name, reason, text the message must hold)
CASES: list[tuple[str, dict[str, Any], str, str, str, str]] = [
    (
        "template-that-deletes",
        _sql("deletes", _template("purge", "DELETE FROM contracts")),
        "toolbinding",
        "deletes",
        "InvalidSpec",
        "spec.sqlQuery.templates[0].sql: template purge is refused by the SQL guard: only SELECT",
    ),
    (
        "template-outside-the-allowlist",
        _sql("elsewhere", _template("users", "SELECT name FROM users")),
        "toolbinding",
        "elsewhere",
        "InvalidSpec",
        "spec.sqlQuery.templates[0].sql: template users is refused by the SQL guard: table "
        "'users' is not allowlisted",
    ),
    (
        "placeholders-without-parameters",
        _sql("unbound", _template("by_id", "SELECT title FROM contracts WHERE id = $1")),
        "toolbinding",
        "unbound",
        "InvalidSpec",
        "spec.sqlQuery.templates[0].sql: template by_id is refused by the SQL guard: the query "
        "has 1 placeholder(s) but the template lists 0 parameter(s)",
    ),
    (
        "template-named-like-another-binding's-tool",
        _sql("shadow", _template("web_search", "SELECT COUNT(*) FROM contracts")),
        "toolbinding",
        "shadow",
        "ToolNameConflict",
        "spec.sqlQuery.templates[0].name: tool name web_search is already bound to agent "
        "contracts by ToolBinding contracts-web",
    ),
    (
        "dataset-configmap-missing",
        _eval("nodata", dataset={"configMapRef": {"name": "absent", "key": "g.jsonl"}}),
        "evalschedule",
        "nodata",
        "DatasetNotFound",
        "spec.dataset.configMapRef.name: ConfigMap absent not found",
    ),
    (
        "dataset-key-missing",
        _eval(
            "nokey", dataset={"configMapRef": {"name": "contracts-golden", "key": "other.jsonl"}}
        ),
        "evalschedule",
        "nokey",
        "DatasetNotFound",
        "spec.dataset.configMapRef.key: ConfigMap contracts-golden has no key other.jsonl",
    ),
    (
        "cron-of-30-february",
        _eval("never", schedule="0 3 30 2 *"),
        "evalschedule",
        "never",
        "InvalidSpec",
        "spec.schedule: '0 3 30 2 *' never fires",
    ),
    (
        "tool-configmap-over-1-mib",
        BIG,
        "toolbinding",
        "big-sql",
        "ChildRejected",
        'ConfigMap big-sql-tool: ConfigMap "big-sql-tool" is invalid: []: Too long',
    ),
]


def _apply(kube: Any, namespace: str, doc: dict[str, Any]) -> None:
    # Server-side: a client-side apply would copy a large manifest into an annotation.
    kube.kubectl("apply", "--server-side", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc))


def _get(kube: Any, namespace: str, what: str) -> dict[str, Any]:
    out = kube.kubectl("get", what, "-n", namespace, "-o", "json", check=False)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def _conditions(kube: Any, namespace: str, what: str) -> dict[str, dict[str, Any]]:
    status = _get(kube, namespace, what).get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or []}


def _ready(kube: Any, namespace: str, what: str) -> dict[str, Any]:
    return _conditions(kube, namespace, what).get("Ready", {})


def _events(kube: Any, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
    items = json.loads(kube.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)
    return [
        e for e in items["items"] if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def test_what_cannot_work_is_reported_with_the_field_named(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    for _, doc, *_ in CASES:
        _apply(kube, namespace, doc)

    def reported() -> bool:
        wrong = {}
        for case, _, kind, name, reason, text in CASES:
            cond = _ready(kube, namespace, f"{kind}/{name}")
            if cond.get("status") != "False" or cond.get("reason") != reason:
                wrong[case] = f"Ready={cond.get('status')} {cond.get('reason')}"
            elif text not in cond.get("message", ""):
                wrong[case] = cond["message"]
        assert not wrong, wrong
        return True

    eventually(reported, timeout=180, what="every case reported")

    def posted() -> bool:  # each Event is posted right after the status write that made it
        missing = [
            f"{case}: no {reason} event"
            for case, _, _kind, name, reason, _ in CASES
            if not _events(kube, namespace, name, reason)
        ]
        assert not missing, missing
        return True

    eventually(posted, what="an Event for every case")
    # A refused or clashing binding is not offered to the agent; valid ones are (big's tool
    # service is only half applied, which the agent reports as a tool not ready).
    offered = {"big-sql", "contracts-clauses", "contracts-sql", "contracts-web"}
    eventually(
        lambda: (
            {
                t["binding"]
                for t in (
                    _get(kube, namespace, "agentdeployment/contracts").get("status") or {}
                ).get("tools")
                or []
            }
            == offered
        ),
        what="the agent offers the valid bindings only",
    )


def test_a_refused_child_is_on_the_owner_and_the_others_are_applied(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    # The binding's Secret must exist and opt in: otherwise nothing would be rendered at all.
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "10-agentdeployment.yaml"))
    _apply(kube, namespace, BIG)
    cond = eventually(
        lambda: (
            (c := _ready(kube, namespace, "toolbinding/big-sql")).get("reason") == "ChildRejected"
            and c
        ),
        timeout=120,
        what="ChildRejected on the ToolBinding",
    )
    assert "Too long: may not be more than 1048576 bytes" in cond["message"]
    assert (
        "Deployment big-sql-tool: not applied: it mounts ConfigMap big-sql-tool" in cond["message"]
    )
    degraded = _conditions(kube, namespace, "toolbinding/big-sql")["Degraded"]
    assert (degraded["status"], degraded["reason"]) == ("True", "ChildRejected")
    events = eventually(  # posted right after the status write
        lambda: (
            (found := _events(kube, namespace, "big-sql", "ChildRejected"))
            and any(e["message"].startswith("Ready=False") for e in found)
            and any(e["message"].startswith("Degraded=True") for e in found)
            and found
        ),
        what="the ChildRejected Events",
    )
    ready = [e for e in events if e["message"].startswith("Ready=False")]
    assert [e["type"] for e in ready] == ["Warning"]
    # The Service and the NetworkPolicy do not depend on the ConfigMap: applied.
    assert _get(kube, namespace, "service/big-sql-tool")
    assert _get(kube, namespace, "networkpolicy/big-sql-tool")
    assert not _get(kube, namespace, "deployment/big-sql-tool")
    # No retry storm: the resync keeps trying, quietly: nothing is rewritten.
    version = _get(kube, namespace, "toolbinding/big-sql")["metadata"]["resourceVersion"]
    runs = operator.text().count("objects enqueued")
    eventually(
        lambda: operator.text().count("objects enqueued") >= runs + 3, what="three more resyncs"
    )
    assert _get(kube, namespace, "toolbinding/big-sql")["metadata"]["resourceVersion"] == version
    assert len(_events(kube, namespace, "big-sql", "ChildRejected")) == len(events)


def _ports(kube: Any, namespace: str) -> list[int]:
    service = _get(kube, namespace, "service/contracts-agent")
    return sorted(p["port"] for p in service.get("spec", {}).get("ports", []))


def test_a_service_port_changed_by_hand_is_put_back(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "agentdeployment/contracts",
        "--timeout=180s",
    )
    assert _ports(kube, namespace) == [8080]
    # kubectl patch is an update under another field manager: the next apply of the operator's
    # port 8080 would merge into two ports named http ("Duplicate value").
    kube.kubectl(
        "patch",
        "service",
        "contracts-agent",
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op": "replace", "path": "/spec/ports/0/port", "value": 9090}]',
    )
    eventually(lambda: _ports(kube, namespace) == [8080], timeout=60, what="port 8080 back alone")
    eventually(
        lambda: _ready(kube, namespace, "agentdeployment/contracts").get("status") == "True",
        what="the AgentDeployment Ready",
    )
    assert "Duplicate value" not in json.dumps(
        _conditions(kube, namespace, "agentdeployment/contracts")
    )


def test_the_schedulers_reason_reaches_the_condition(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    wrong_gpu = _named(AGENT, "a100")
    wrong_gpu["spec"]["model"]["gpu"] = {"count": 4, "product": "NVIDIA-A100-SXM4-80GB"}
    _apply(kube, namespace, wrong_gpu)
    # 5 pods of 8 GPUs on 4 nodes of 8: one cannot be placed.
    too_many = _named(AGENT, "greedy")
    too_many["spec"]["model"].update(gpu={"count": 8}, tensorParallelSize=8, replicas=5)
    _apply(kube, namespace, too_many)
    # a100: no pod placed, not serving: Ready=False says why. greedy: 4 of 5 placed, which is
    # serving (5 - maxUnavailable 1) once they are up: Progressing (RollingOut) says why the
    # rollout cannot complete, and Ready may say it too while fewer are available.
    for name, reason, where in (
        ("a100", "didn't match Pod's node affinity/selector", ("Ready",)),
        ("greedy", "Insufficient nvidia.com/gpu", ("Ready", "Progressing")),
    ):
        cond = eventually(
            lambda name=name, reason=reason, where=where: next(
                (
                    c
                    for t, c in _conditions(kube, namespace, f"agentdeployment/{name}").items()
                    if t in where and reason in c.get("message", "")
                ),
                None,
            ),
            timeout=120,
            what=f"the scheduler's reason on {name}",
        )
        assert cond["reason"] in ("ModelNotReady", "RollingOut")
        assert f"pod {name}-model-" in cond["message"]


def _terminating(kube: Any) -> list[str]:
    found = json.loads(kube.kubectl("get", "namespaces", "-o", "json").stdout)["items"]
    return [n["metadata"]["name"] for n in found if n["status"].get("phase") == "Terminating"]


def _fill_service_ips(kube: Any, namespace: str, prefix: str = "filler") -> None:
    """Services until the Service IP range (a /24 in the test cluster) is full."""
    services = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{prefix}-{i}"},
            "spec": {"ports": [{"port": 80}]},
        }
        for i in range(260)
    ]
    out = kube.kubectl(
        "apply",
        "--server-side",
        "-n",
        namespace,
        "-f",
        "-",
        input=yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": services}),
        check=False,
    )
    assert "range is full" in out.stderr, out.stderr[-2000:]


def test_a_full_service_ip_range_is_reported_and_retried(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("create", "namespace", f"{namespace}-fill")
    try:
        # Namespaces of earlier tests still being deleted free their Service IPs later: wait for
        # them, fill the range, and fill again what was freed meanwhile.
        eventually(lambda: not _terminating(kube), timeout=180, what="no namespace terminating")
        _fill_service_ips(kube, f"{namespace}-fill")
        _fill_service_ips(kube, f"{namespace}-fill", prefix="late-filler")
        endpoint = _named(AGENT, "late")
        endpoint["spec"]["model"] = {
            "endpoint": "http://vllm.models.svc:8000/v1",
            "servedModelName": "llama",
        }
        _apply(kube, namespace, endpoint)
        cond = eventually(
            lambda: (
                (c := _ready(kube, namespace, "agentdeployment/late")).get("reason")
                == "ChildRejected"
                and c
            ),
            timeout=120,
            what="ChildRejected for the Service",
        )
        assert "Service late-agent:" in cond["message"]
        assert "range is full (retried)" in cond["message"]
        # The others are applied (the agent Deployment once its first-rollout hold ends).
        eventually(
            lambda: _get(kube, namespace, "deployment/late-agent"),
            timeout=60,
            what="the agent Deployment applied beside the refused Service",
        )
        kube.kubectl(
            "delete", "service", "filler-0", "filler-1", "-n", f"{namespace}-fill", "--wait"
        )
        eventually(
            lambda: _get(kube, namespace, "service/late-agent"),
            timeout=120,
            what="the Service, once an IP is free",
        )
        eventually(
            lambda: (
                _ready(kube, namespace, "agentdeployment/late").get("reason") != "ChildRejected"
            ),
            what="ChildRejected cleared",
        )
    finally:
        kube.kubectl(
            "delete", "namespace", f"{namespace}-fill", "--wait=true", "--timeout=120s", check=False
        )
