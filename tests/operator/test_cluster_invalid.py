"""Invalid manifests are refused by the real apiserver with a message naming the field; what the
schema cannot say (missing Secret, missing agent, a tool-name clash) becomes a condition.
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
WEB = example("ToolBinding", "contracts-web")[0]
EVAL = example("EvalSchedule", "contracts-weekly")[0]
LLAMA4 = "meta-llama/Llama-4-Scout-17B-16E-Instruct"


def _agent(**model: Any) -> dict[str, Any]:
    doc = copy.deepcopy(AGENT)
    doc["metadata"] = {"name": "bad"}
    for key, value in model.items():
        if value is None:
            doc["spec"]["model"].pop(key, None)
        else:
            doc["spec"]["model"][key] = value
    return doc


def _with(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": "bad"}
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return doc


ENDPOINT = {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}
SERVING = [
    "name",
    "quantization",
    "tensorParallelSize",
    "gpu",
    "maxModelLen",
    "cache",
    "tokenSecretRef",
    "resources",
]

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("endpoint-and-name", _agent(endpoint="http://vllm:8000/v1"), "spec.model: set exactly one"),
    ("neither-endpoint-nor-name", _agent(name=None), "spec.model: set exactly one"),
    (
        "endpoint-without-served-name",
        _with(_agent(**dict.fromkeys(SERVING)), "spec.model.endpoint", "http://v:8000/v1"),
        "spec.model.servedModelName is required",
    ),
    (
        "endpoint-with-gpu",
        _with(_agent(**dict.fromkeys(SERVING), **ENDPOINT), "spec.model.gpu", {"count": 1}),
        "serving fields",
    ),
    (
        "gpu-not-multiple-of-tp",
        _agent(gpu={"count": 3}, tensorParallelSize=2),
        "spec.model.gpu.count must be a multiple",
    ),
    ("unknown-family", _agent(name="google/gemma-2-27b-it"), "spec.model.toolCallParser"),
    (
        "guided-format-without-guided",
        _agent(guidedFormat="json_object"),
        "spec.model.guidedFormat is used only with toolCalling: guided",
    ),
    ("unknown-tool-calling", _agent(toolCalling="grammar"), "spec.model.toolCalling"),
    ("too-many-gpus", _agent(gpu={"count": 16}), "spec.model.gpu.count"),
    ("unknown-quantization", _agent(quantization="int3"), "spec.model.quantization"),
    ("unknown-parser", _agent(toolCallParser="xml"), "spec.model.toolCallParser"),
    ("cache-both", _agent(cache={"size": "1Gi", "claimName": "w"}), "spec.model.cache"),
    (
        "secret-ref-without-key",
        _agent(tokenSecretRef={"name": "hf"}),
        "spec.model.tokenSecretRef.key",
    ),
    ("short-context", _agent(maxModelLen=100), "spec.model.maxModelLen"),
    (
        "endpoint-not-a-url",
        _with(_agent(**dict.fromkeys(SERVING), **ENDPOINT), "spec.model.endpoint", "vllm:8000"),
        "spec.model.endpoint",
    ),
    (
        "too-many-iterations",
        _with(AGENT, "spec.agent.maxIterations", 11),
        "spec.agent.maxIterations",
    ),
    ("zero-iterations", _with(AGENT, "spec.agent.maxIterations", 0), "spec.agent.maxIterations"),
    (
        "tracing-endpoint-not-a-url",
        _with(AGENT, "spec.agent.tracing", {"endpoint": "jaeger:4318"}),
        "spec.agent.tracing.endpoint",
    ),
    (
        "tracing-ratio-above-one",
        _with(AGENT, "spec.agent.tracing", {"samplingRatio": 1.5}),
        "spec.agent.tracing.samplingRatio",
    ),
    (
        "tracing-ratio-below-zero",
        _with(AGENT, "spec.agent.tracing", {"samplingRatio": -0.5}),
        "spec.agent.tracing.samplingRatio",
    ),
    ("unknown-field", _agent(gpus=4), 'unknown field "spec.model.gpus"'),
    ("long-name", {**_agent(), "metadata": {"name": "a" * 41}}, "metadata.name must be at most 40"),
    ("sql-without-settings", _with(SQL, "spec.sqlQuery", None), "spec.sqlQuery is required"),
    (
        "settings-of-another-type",
        _with(SQL, "spec.webSearch", WEB["spec"]["webSearch"]),
        "spec.webSearch is required when type is web_search, and forbidden otherwise",
    ),
    (
        "web-without-opt-in",
        _with(WEB, "spec.webSearch.allowExternal", False),
        "spec.webSearch.allowExternal must be true",
    ),
    (
        "empty-allowlist",
        _with(SQL, "spec.sqlQuery.allowedTables", []),
        "spec.sqlQuery.allowedTables",
    ),
    (
        "table-not-an-identifier",
        _with(SQL, "spec.sqlQuery.allowedTables", ["contracts; drop"]),
        "spec.sqlQuery.allowedTables[0]",
    ),
    ("unknown-tool-type", _with(SQL, "spec.type", "graph_search"), "spec.type"),
    (
        "approval-always-with-match",
        _with(WEB, "spec.approval", {"required": "always", "match": {"toolOutput": True}}),
        "spec.approval.match is required when required is onMatch, and forbidden",
    ),
    (
        "approval-match-without-a-rule",
        _with(WEB, "spec.approval", {"required": "onMatch", "match": {}}),
        "spec.approval.match: set toolOutput: true or tables",
    ),
    (
        "approval-tables-on-web-search",
        _with(WEB, "spec.approval", {"required": "onMatch", "match": {"tables": ["contracts"]}}),
        "spec.approval.match.tables is only for type sql_query",
    ),
    (
        "approval-table-not-allowlisted",
        _with(SQL, "spec.approval", {"required": "onMatch", "match": {"tables": ["payroll"]}}),
        "spec.approval.match.tables: every table must be one of spec.sqlQuery.allowedTables",
    ),
    ("bad-tool-name", _with(SQL, "spec.name", "sql query!"), "spec.name"),
    ("no-agent-ref", _with(SQL, "spec.agentRef", None), "spec.agentRef"),
    ("zero-timeout", _with(SQL, "spec.timeoutSeconds", 0), "spec.timeoutSeconds"),
    (
        "enum-on-an-integer-parameter",
        _with(
            SQL,
            "spec.sqlQuery.templates",
            [
                {
                    "name": "by_year",
                    "description": "Contracts of a year. NOT for clauses.",
                    "sql": "SELECT COUNT(*) FROM contracts WHERE year = $1",
                    "parameters": [{"name": "year", "type": "integer", "allowedValues": ["2025"]}],
                }
            ],
        ),
        "spec.sqlQuery.templates[0].parameters[0].allowedValues",
    ),
    # Accepted before, failing only later (issue 15): vLLM, the Pod template or Prometheus
    # would have refused them.
    ("hermes-on-llama-3.1", _agent(toolCallParser="hermes"), "spec.model.toolCallParser"),
    (
        "mistral-on-qwen2.5",
        _agent(name="Qwen/Qwen2.5-72B-Instruct", toolCallParser="mistral"),
        "spec.model.toolCallParser: mistral does not fit Qwen2.5",
    ),
    (
        "llama3-json-on-llama-4",
        _agent(name=LLAMA4, toolCallParser="llama3_json"),
        "spec.model.toolCallParser: llama3_json does not fit Llama 4",
    ),
    ("context-beyond-the-model", _agent(maxModelLen=262144), "spec.model.maxModelLen"),
    (
        "extra-args-repeat-a-managed-flag",
        _agent(extraArgs=["--tensor-parallel-size=8"]),
        "spec.model.extraArgs",
    ),
    ("newline-in-served-name", _agent(servedModelName="llama\nx"), "spec.model.servedModelName"),
    ("700-kb-extra-arg", _agent(extraArgs=["x" * 700_000]), "spec.model.extraArgs[0]"),
    (
        "memory-request-above-limit",
        _agent(resources={"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}),
        "spec.model.resources.requests",
    ),
    (
        "cpu-banana",
        _with(AGENT, "spec.agent.resources", {"requests": {"cpu": "banana"}}),
        "spec.agent.resources.requests",
    ),
    (
        "resource-name-gpux",
        _agent(resources={"limits": {"gpux": 1}}),
        "spec.model.resources.limits",
    ),
    # Autoscaling (issue 31): contradictions refused with the field named.
    (
        "model-autoscaling-min-above-max",
        _agent(autoscaling={"minReplicas": 3, "maxReplicas": 2}),
        "spec.model.autoscaling.minReplicas must not exceed",
    ),
    (
        "agent-autoscaling-min-zero",
        _with(AGENT, "spec.agent.autoscaling", {"minReplicas": 0}),
        "spec.agent.autoscaling.minReplicas",
    ),
    (
        "agent-autoscaling-min-above-max",
        _with(AGENT, "spec.agent.autoscaling", {"minReplicas": 5, "maxReplicas": 4}),
        "spec.agent.autoscaling.minReplicas must not exceed",
    ),
    (
        "autoscaling-with-an-endpoint",
        _with(_agent(**dict.fromkeys(SERVING), **ENDPOINT), "spec.model.autoscaling", {}),
        "spec.model.autoscaling scales the model server sleuth runs",
    ),
    (
        "model-replicas-and-autoscaling",
        _agent(replicas=2, autoscaling={}),
        "spec.model.replicas and spec.model.autoscaling",
    ),
    (
        "wake-wait-beyond-the-request-timeout",
        _agent(autoscaling={"wakeWaitSeconds": 60}),
        "spec.model.autoscaling.wakeWaitSeconds must be less than",
    ),
    ("cron-step-zero", _with(EVAL, "spec.schedule", "*/0 * * * *"), "spec.schedule"),
    ("alert-window-zero", _with(EVAL, "spec.alerts.window", "0m"), "spec.alerts.window"),
    (
        "threshold-of-a-metric-not-scored",
        _with(_with(EVAL, "spec.metrics", ["faithfulness"]), "spec.thresholds.contextRecall", 0.5),
        "spec.thresholds.contextRecall",
    ),
]


@pytest.mark.parametrize(("case", "doc", "field"), CASES, ids=[c[0] for c in CASES])
def test_invalid_manifest_is_refused_naming_the_field(
    kube: Any, namespace: str, crds: None, case: str, doc: dict[str, Any], field: str
) -> None:
    proc = kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0, f"{case} was accepted"
    assert field in proc.stderr, proc.stderr
    kind = doc["kind"].lower()
    assert (
        kube.kubectl("get", kind, doc["metadata"]["name"], "-n", namespace, check=False).returncode
        != 0
    )


def test_there_are_at_least_fifteen_cases() -> None:
    assert len(CASES) >= 15


def _condition(kube: Any, ns: str, name: str, kind: str) -> dict[str, Any]:
    obj = json.loads(kube.kubectl("get", "agentdeployment", name, "-n", ns, "-o", "json").stdout)
    conds = {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}
    return conds.get(kind, {})


def _ready(kube: Any, ns: str, kind: str, name: str) -> dict[str, Any]:
    obj = json.loads(kube.kubectl("get", kind, name, "-n", ns, "-o", "json").stdout)
    conds = {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}
    return conds.get("Ready", {})


def test_missing_secret_and_missing_agent_are_conditions_that_heal(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    sql = yaml.safe_dump(SQL)
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=sql)
    cond = eventually(
        lambda: _ready(kube, namespace, "toolbinding", "contracts-sql"),
        what="a Ready condition on the binding",
    )
    assert cond["status"] == "False"
    assert cond["reason"] == "AgentNotFound"
    assert "spec.agentRef.name" in cond["message"]

    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(AGENT))
    cond = eventually(
        lambda: (
            (c := _ready(kube, namespace, "agentdeployment", "contracts"))
            and c["reason"] == "SecretNotFound"
            and c
        ),
        what="SecretNotFound on the agent",
    )
    assert "spec.model.tokenSecretRef: Secret hf-token not found" in cond["message"]
    binding = eventually(
        lambda: (
            (c := _ready(kube, namespace, "toolbinding", "contracts-sql"))
            and c["reason"] == "SecretNotFound"
            and c
        ),
        what="the binding healed from AgentNotFound to SecretNotFound",
    )
    assert (
        "spec.sqlQuery.connectionSecretRef: Secret contracts-postgres not found"
        in (binding["message"])
    )
    # Not rendered: a Secret created later without its opt-in must not be picked up by pods.
    for what in ("deployment/contracts-model", "deployment/contracts-sql-tool"):
        out = kube.kubectl("get", what, "-n", namespace, check=False)
        assert out.returncode != 0, f"{what} exists"
    # No retry storm: the resync keeps running, but nothing is rewritten and no event repeats.
    eventually(
        lambda: (
            _condition(kube, namespace, "contracts", "Progressing").get("reason")
            == "SecretNotFound"
            and _condition(kube, namespace, "contracts", "Degraded").get("reason")
            == "SecretNotFound"
        ),
        what="the conditions settle",
    )
    rv = json.loads(
        kube.kubectl("get", "agentdeployment", "contracts", "-n", namespace, "-o", "json").stdout
    )["metadata"]["resourceVersion"]
    runs = operator.text().count("objects enqueued")
    eventually(
        lambda: operator.text().count("objects enqueued") >= runs + 3, what="three more resyncs"
    )
    after = json.loads(
        kube.kubectl("get", "agentdeployment", "contracts", "-n", namespace, "-o", "json").stdout
    )["metadata"]["resourceVersion"]
    assert after == rv
    events = json.loads(kube.kubectl("get", "events", "-n", namespace, "-o", "json").stdout)
    secret_events = [
        e
        for e in events["items"]
        if e["involvedObject"]["name"] == "contracts"
        and e["reason"] == "SecretNotFound"
        and e["message"].startswith("Ready=")
    ]
    assert len(secret_events) == 1

    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES / "00-secrets.yaml"))
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "agentdeployment/contracts",
        "toolbinding/contracts-sql",
        "--timeout=120s",
    )


def test_a_clashing_tool_name_is_refused_with_the_field_named(
    kube: Any, namespace: str, operator: OperatorProcess
) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", str(EXAMPLES))
    kube.kubectl(
        "wait",
        "-n",
        namespace,
        "--for=condition=Ready",
        "toolbinding/contracts-sql",
        "--timeout=120s",
    )
    clash = _with(SQL, "spec.description", "Another SQL source. NOT for documents.")
    clash["metadata"] = {"name": "contracts-sql-2"}
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(clash))
    cond = eventually(
        lambda: (
            (c := _ready(kube, namespace, "toolbinding", "contracts-sql-2"))
            and c.get("reason") == "ToolNameConflict"
            and c
        ),
        what="ToolNameConflict",
    )
    assert cond["message"].startswith("spec.name: tool name sql_query is already bound")
    assert (
        kube.kubectl(
            "get", "deployment", "contracts-sql-2-tool", "-n", namespace, check=False
        ).returncode
        != 0
    )
    assert _ready(kube, namespace, "toolbinding", "contracts-sql")["status"] == "True"


def test_guided_tool_calling_serves_an_unknown_family(
    kube: Any, namespace: str, crds: None
) -> None:
    """The apiserver's CEL agrees with the spec model: guided calls need no parser."""
    doc = _agent(name="google/gemma-2-27b-it", toolCalling="guided")
    doc["metadata"] = {"name": "guided"}
    proc = kube.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc)
    )
    assert proc.returncode == 0, proc.stderr
