"""The chart rendered offline: lint, goldens, schema, CRD copies, and its contract with the code."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.api.v1alpha1.serving import DEFAULT_VLLM_IMAGE
from tests.charts.chart_testkit import (
    CHART,
    GOLDEN,
    RELEASE_NAMESPACE,
    VALUE_SETS,
    documents,
    find,
    operator_args,
    run_helm,
    template,
)
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration

UPDATE = os.environ.get("SLEUTH_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("name", VALUE_SETS)
def test_lint_strict(helm: Path, name: str) -> None:
    values = VALUE_SETS[name]
    args = ["lint", "--strict", str(CHART)] + (["-f", str(values)] if values else [])
    out = run_helm(helm, *args).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out
    assert "[WARNING]" not in out
    assert "[ERROR]" not in out


@pytest.mark.parametrize("name", VALUE_SETS)
def test_template_matches_golden(helm: Path, name: str) -> None:
    rendered = template(helm, VALUE_SETS[name])
    golden = GOLDEN / f"{name}.yaml"
    if UPDATE:
        golden.write_text(rendered, encoding="utf-8")
    assert golden.exists(), f"no golden {golden}; run with SLEUTH_UPDATE_GOLDEN=1"
    assert rendered == golden.read_text(encoding="utf-8"), (
        f"helm template drifted from {golden.relative_to(ROOT)}; "
        "review the diff and regenerate with SLEUTH_UPDATE_GOLDEN=1"
    )


def test_chart_crds_are_byte_copies_of_crds() -> None:
    source = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert source, "crds/ is empty"
    assert sorted(chart) == sorted(source), "charts/sleuth/crds/ and crds/ hold different files"
    drifted = [name for name in source if chart[name] != source[name]]
    assert not drifted, (
        f"charts/sleuth/crds/ drifted from crds/: {drifted}; run cp crds/*.yaml charts/sleuth/crds/"
    )


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("operator.replicass=1", "replicass"),
        ("watchNamespace[0]=team-a", "watchNamespace"),
        ("metrics.serviceMonitor.enable=true", "enable"),
    ],
)
def test_schema_refuses_misspelt_key_naming_it(helm: Path, setting: str, named: str) -> None:
    proc = run_helm(helm, "template", "x", str(CHART), "--set", setting, check=False)
    assert proc.returncode != 0
    assert f"additional properties '{named}' not allowed" in proc.stderr


@pytest.mark.parametrize(
    ("setting", "where"),
    [
        ("operator.replicas=two", "/operator/replicas"),
        ("operator.replicas=9", "/operator/replicas"),
        ("image.tag=latest", "/image/tag"),
        ("modelImage=docker.io/vllm/vllm-openai:latest", "/modelImage"),
        ("modelImage=docker.io/vllm/vllm-openai", "/modelImage"),
        ("watchNamespaces[0]=Team_A", "/watchNamespaces/0"),
        ("grafanaDashboard.thresholds.faithfulness=1.5", "/grafanaDashboard/thresholds"),
    ],
)
def test_schema_refuses_wrong_values(helm: Path, setting: str, where: str) -> None:
    proc = run_helm(helm, "template", "x", str(CHART), "--set", setting, check=False)
    assert proc.returncode != 0
    assert where in proc.stderr


def test_replicas_without_leader_election_are_refused(helm: Path) -> None:
    sets = ["--set", "operator.replicas=2", "--set", "operator.leaderElection=false"]
    proc = run_helm(helm, "template", "x", str(CHART), *sets, check=False)
    assert proc.returncode != 0
    assert "operator.replicas > 1 needs operator.leaderElection=true" in proc.stderr


def _objects(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append((path, node))
        for key, child in node.items():
            found += _objects(child, f"{path}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _objects(child, f"{path}/{i}")
    return found


# Kubernetes API types passed through verbatim; the API server validates them on install.
OPAQUE = {"valueFrom", "nodeAffinity", "podAffinity", "podAntiAffinity"}


def test_schema_objects_refuse_unknown_keys() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    for path, node in _objects(schema):
        if path.rsplit("/", 1)[-1] in OPAQUE:
            continue
        if "properties" in node:
            assert node.get("additionalProperties") is False, f"{path} accepts unknown keys"
        else:  # free-form maps (labels, annotations, nodeSelector) are typed, never open
            assert isinstance(node.get("additionalProperties"), dict), f"{path} is untyped"


def _value_keys(text: str) -> list[tuple[int, str, str]]:
    """(line number, key, first line of the comment block above it) for every values.yaml key."""
    lines = text.splitlines()
    keys = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-")):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        j = i
        while j > 0 and lines[j - 1].startswith(indent + "#"):
            j -= 1
        keys.append((i + 1, stripped.split(":", 1)[0], lines[j].strip() if j < i else ""))
    return keys


def test_values_are_documented_key_by_key_in_camel_case() -> None:
    text = (CHART / "values.yaml").read_text()
    keys = _value_keys(text)
    assert len(keys) > 40
    for line, key, comment in keys:
        assert comment.startswith(f"# {key} "), f"values.yaml:{line}: {key} lacks '# {key} ...'"
        if "/" not in key:  # label keys inside maps (kubernetes.io/os) are not ours to name
            assert re.fullmatch(r"[a-z][A-Za-z0-9]*", key), f"{key} is not camelCase"


def test_defaults_follow_the_code() -> None:
    from sleuth.core.api.v1alpha1.serving import DEFAULT_VLLM_IMAGE
    from sleuth.evals.report.results import DEFAULT_THRESHOLDS
    from sleuth.operator.render.meta import DEFAULT_SLEUTH_IMAGE

    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    image = f"{values['image']['repository']}:{values['image']['tag']}"
    assert image == DEFAULT_SLEUTH_IMAGE
    assert values["modelImage"] == DEFAULT_VLLM_IMAGE
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["appVersion"] == project["version"] == values["image"]["tag"]
    t = values["grafanaDashboard"]["thresholds"]
    assert t["faithfulness"] == DEFAULT_THRESHOLDS["faithfulness"]
    assert t["answerRelevancy"] == DEFAULT_THRESHOLDS["answer_relevancy"]
    assert t["toolSelectionAccuracy"] == DEFAULT_THRESHOLDS["tool_selection_accuracy"]
    assert t["contextPrecision"] == DEFAULT_THRESHOLDS["context_precision_simple"]
    assert t["contextRecall"] == DEFAULT_THRESHOLDS["context_recall"]


@pytest.mark.parametrize("name", VALUE_SETS)
def test_operator_arguments_are_accepted_by_the_cli(helm: Path, name: str) -> None:
    from sleuth.core.cli import build_parser

    docs = documents(template(helm, VALUE_SETS[name]))
    args = build_parser("operator").parse_args(operator_args(docs))
    values = yaml.safe_load(VALUE_SETS[name].read_text()) if VALUE_SETS[name] else {}
    assert (args.namespace or []) == values.get("watchNamespaces", [])
    assert args.image.startswith("ghcr.io/sleuth-dev/sleuth")
    assert args.model_image == values.get("modelImage", DEFAULT_VLLM_IMAGE)
    assert args.metrics_port == 9090
    assert args.liveness == "http://0.0.0.0:8080/healthz"
    assert args.leader_election_lease == "sleuth-operator"
    assert args.leader_election_namespace == RELEASE_NAMESPACE
    assert args.workers == 16
    (operator,) = [d for d in docs if d["kind"] == "Deployment"]
    grace = operator["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert args.shutdown_seconds + 10 <= grace  # in-flight reconciles end well inside the grace


def test_pull_secrets_and_policy_reach_the_operator_for_every_pod_it_renders(helm: Path) -> None:
    """imagePullSecrets and image.pullPolicy: the operator's own pod, and the flags through which
    every pod the operator renders gets them (tests/operator/test_render_image_pull.py)."""
    from sleuth.core.cli import build_parser
    from sleuth.operator.main import operator_settings

    docs = documents(
        template(
            helm,
            None,
            "imagePullSecrets[0].name=regcred",
            "imagePullSecrets[1].name=mirror",
            "image.pullPolicy=Always",
        )
    )
    (deployment,) = find(docs, "Deployment")
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [
        {"name": "regcred"},
        {"name": "mirror"},
    ]
    render = operator_settings(build_parser("operator").parse_args(operator_args(docs)), {}).render
    assert render.image_pull_secrets == ("regcred", "mirror")
    assert render.image_pull_policy == "Always"
    default = operator_settings(
        build_parser("operator").parse_args(operator_args(documents(template(helm)))), {}
    ).render
    assert (default.image_pull_secrets, default.image_pull_policy) == ((), "IfNotPresent")


def test_empty_model_image_leaves_the_operator_default(helm: Path) -> None:
    args = operator_args(documents(template(helm, None, "modelImage=")))
    assert not [a for a in args if a.startswith("--model-image")]
    mirror = "mirror.internal/vllm-openai:v0.11.0"
    assert f"--model-image={mirror}" in operator_args(
        documents(template(helm, None, f"modelImage={mirror}"))
    )


def test_every_runbook_link_leads_to_a_page_and_the_operator_uses_the_same_base(
    helm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chart's alerts and every EvalSchedule's link <runbookBaseUrl>/<Alert>.md, one base."""
    from sleuth.operator.render.meta import DEFAULT_RUNBOOK_BASE_URL
    from sleuth.operator.settings import settings_from_env

    docs = documents(template(helm, VALUE_SETS["monitoring"]))
    (rule,) = find(docs, "PrometheusRule")
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert len(urls) == 5
    for url in urls:
        base, _, page = url.rpartition("/")
        assert base == DEFAULT_RUNBOOK_BASE_URL
        assert (ROOT / "docs" / "runbooks" / page).is_file(), f"{url}: no such runbook page"
    (operator,) = find(docs, "Deployment")
    (container,) = operator["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SLEUTH_RUNBOOK_BASE_URL"] == DEFAULT_RUNBOOK_BASE_URL
    mine = "https://wiki.internal/sre/sleuth/"
    docs = documents(
        template(helm, VALUE_SETS["monitoring"], f"metrics.prometheusRule.runbookBaseUrl={mine}")
    )
    (rule,) = find(docs, "PrometheusRule")
    assert rule["spec"]["groups"][0]["rules"][0]["annotations"]["runbook_url"] == (
        "https://wiki.internal/sre/sleuth/SleuthOperatorUnavailable.md"
    )
    (operator,) = find(docs, "Deployment")
    (container,) = operator["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    monkeypatch.setenv("SLEUTH_RUNBOOK_BASE_URL", env["SLEUTH_RUNBOOK_BASE_URL"])
    assert settings_from_env().runbook_base_url == mine


def test_every_object_carries_the_standard_labels(helm: Path) -> None:
    for name, values in VALUE_SETS.items():
        for doc in documents(template(helm, values)):
            labels = doc["metadata"].get("labels", {})
            for key in ("name", "instance", "version", "part-of", "managed-by"):
                assert f"app.kubernetes.io/{key}" in labels, f"{name}: {doc['kind']} lacks {key}"
            assert labels["app.kubernetes.io/managed-by"] == "Helm"


def test_namespaced_mode_has_roles_and_no_cluster_roles(helm: Path) -> None:
    docs = documents(template(helm, VALUE_SETS["namespaced"]))
    assert not find(docs, "ClusterRole")
    assert not find(docs, "ClusterRoleBinding")
    roles = find(docs, "Role", "sleuth-operator")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    bindings = find(docs, "RoleBinding", "sleuth-operator")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    for b in bindings:
        assert b["subjects"][0]["namespace"] == RELEASE_NAMESPACE
    (lease,) = find(docs, "Role", "sleuth-operator-leader-election")
    assert lease["metadata"]["namespace"] == RELEASE_NAMESPACE
    assert {v for r in lease["rules"] for v in r["verbs"]} == {"create", "get", "update"}


def test_cluster_mode_never_grants_secrets_cluster_wide(helm: Path) -> None:
    for name in ("default", "monitoring"):
        docs = documents(template(helm, VALUE_SETS[name]))
        bound = {b["roleRef"]["name"] for b in find(docs, "ClusterRoleBinding")}
        for role in find(docs, "ClusterRole"):
            grants_secrets = any("secrets" in r["resources"] for r in role["rules"])
            assert not (grants_secrets and role["metadata"]["name"] in bound), name
            for rule in role["rules"]:
                assert "*" not in rule["verbs"]
                assert "*" not in rule["resources"]


def test_by_default_secrets_are_readable_where_the_readme_applies_the_example(
    helm: Path,
) -> None:
    """The README applies examples/contracts/ with no namespace: `default`. The chart's
    defaults let the operator read Secrets there and nowhere else (no SecretUnverifiable on
    the README's path); a value set that names namespaces replaces the default."""
    docs = documents(template(helm, VALUE_SETS["default"]))
    readers = find(docs, "RoleBinding", "sleuth-operator-secret-reader")
    assert [b["metadata"]["namespace"] for b in readers] == ["default"]
    assert readers[0]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "sleuth-operator-secret-reader",
    }
    docs = documents(template(helm, VALUE_SETS["monitoring"]))
    readers = find(docs, "RoleBinding", "sleuth-operator-secret-reader")
    assert sorted(b["metadata"]["namespace"] for b in readers) == ["agents", "search"]


_GATE = {"passed": True}
SAMPLE_EVAL_RESULTS: list[dict[str, Any]] = [
    {
        "kind": "ragas",
        "agent": "a",
        "dataset": "d",
        "split": "test",
        "metrics": {
            name: {"value": 0.8, "failed_rows": 0}
            for name in (
                "faithfulness",
                "answer_relevancy",
                "context_precision",
                "context_precision_simple",
                "context_recall",
                "noise_sensitivity",
            )
        },
        "gate": _GATE,
        "usage": {"total_tokens": 10},
    },
    {
        "kind": "tsa",
        "agent": "a",
        "dataset": "d",
        "split": "test",
        "metrics": {
            "tool_selection_accuracy": {"value": 0.9},
            "argument_accuracy": {"value": 0.9},
        },
        "summary": {"per_tool": {"sql_query": {"tsa": 0.9}}, "errors": 0},
        "gate": _GATE,
        "usage": {},
    },
]


def test_dashboard_queries_use_metrics_the_code_exports(helm: Path) -> None:
    from prometheus_client import CollectorRegistry

    from sleuth.agent.metrics import AgentMetrics
    from sleuth.evals.report.prometheus import exposition
    from sleuth.operator.evalmetrics import EvalMetrics
    from sleuth.operator.loop.metrics import OperatorMetrics

    schedules = CollectorRegistry()
    schedules.register(EvalMetrics())
    exported = {
        m.name + ("_total" if m.type == "counter" else "")
        for registry in (
            AgentMetrics("a", CollectorRegistry()).registry,
            OperatorMetrics().registry,
            schedules,
        )
        for m in registry.collect()
    }
    exported |= set(re.findall(r"^# TYPE (\S+) ", exposition(SAMPLE_EVAL_RESULTS), re.M))
    assert "rag_faithfulness_score" in exported
    assert "sleuth_agent_tokens_total" in exported
    assert "sleuth_operator_reconcile_total" in exported

    docs = documents(template(helm))
    (cm,) = find(docs, "ConfigMap")
    dashboard = json.loads(cm["data"]["sleuth.json"])
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 15
    used = set()
    for expr in exprs:
        for token in re.findall(r"\b((?:sleuth|rag|agent)_[a-z_]+)\b", expr):
            used.add(re.sub(r"_(bucket|sum|count)$", "", token))
    missing = used - exported
    assert not missing, f"dashboard queries metrics nobody exports: {sorted(missing)}"
    titles = {p["title"] for p in dashboard["panels"]}
    for title in (
        "Answer latency",
        "Iterations per answer",
        "Tool calls by tool",
        "Tool errors by tool",
        "Time to first token",
        "Tokens by agent",
        "Faithfulness",
        "Tool selection accuracy",
        "Context precision",
        "Context recall",
        "Eval runs: last run failed",
        "Resources not ready",
        "Reconciles by outcome",
        "Reconcile duration",
    ):
        assert title in titles
    thresholds = {
        p["title"]: p["fieldConfig"]["defaults"]["thresholds"]["steps"][1]["value"]
        for p in dashboard["panels"]
        if "thresholds" in p.get("fieldConfig", {}).get("defaults", {})
    }
    assert thresholds["Faithfulness"] == 0.8
    assert thresholds["Tool selection accuracy"] == 0.85
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"


def test_install_guide_settings_render(helm: Path) -> None:
    """Every `--set` in docs/install.md passes the schema and renders."""
    text = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    settings = re.findall(r"--set '?([A-Za-z][\w.]*=[^' \n]+)'?", text)
    assert len(settings) >= 6
    for setting in settings:
        docs = documents(template(helm, None, setting))
        assert find(docs, "Deployment"), setting
    namespaced = documents(template(helm, None, "watchNamespaces={team-a,team-b}"))
    assert sorted(
        r["metadata"]["namespace"] for r in find(namespaced, "Role", "sleuth-operator")
    ) == [
        "team-a",
        "team-b",
    ]


def test_tracing_values_reach_the_operator_flags(helm: Path, tmp_path: Path) -> None:
    """Tracing is off by default (no flag); the three values become the operator's flags."""
    from sleuth.core.cli import build_parser

    assert not [a for a in operator_args(documents(template(helm))) if "tracing" in a]
    endpoint = "http://jaeger-collector.observability:4318"
    values = tmp_path / "tracing.yaml"
    tracing = {"endpoint": endpoint, "samplingRatio": 0.25, "captureContent": True}
    values.write_text(yaml.safe_dump({"tracing": tracing}))
    parsed = build_parser("operator").parse_args(operator_args(documents(template(helm, values))))
    assert parsed.tracing_endpoint == endpoint
    assert parsed.tracing_sampling_ratio == 0.25
    assert parsed.tracing_capture_content is True


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"samplingRatio": 1.5}, "/tracing/samplingRatio"),
        ({"samplingRatio": -0.5}, "/tracing/samplingRatio"),
        ({"endpoint": "jaeger:4318"}, "/tracing/endpoint"),
        ({"sampler": "always_on"}, "sampler"),
    ],
)
def test_bad_tracing_values_are_refused_by_the_schema(
    helm: Path, tmp_path: Path, bad: dict[str, Any], said: str
) -> None:
    values = tmp_path / "bad.yaml"
    values.write_text(yaml.safe_dump({"tracing": bad}))
    proc = run_helm(helm, "template", "sleuth", str(CHART), "-f", str(values), check=False)
    assert proc.returncode != 0
    assert said in proc.stderr, proc.stderr
