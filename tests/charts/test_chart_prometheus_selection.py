"""The chart's values for a platform's Prometheus (kube-prometheus-stack and stricter ones): the
rule labels reach the operator, honorLabels and the ServiceMonitors' namespace selection are the
platform team's to set, and the operator's flags follow them."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.core.cli import build_parser
from sleuth.operator.main import operator_settings
from tests.charts.chart_testkit import (
    VALUE_SETS,
    documents,
    find,
    operator_args,
    run_helm,
    template,
)

pytestmark = pytest.mark.integration


def test_rule_labels_reach_the_operator_and_each_evalschedules_rule(helm: Path) -> None:
    docs = documents(template(helm, VALUE_SETS["monitoring"]))
    args = operator_args(docs)
    assert "--prometheus-rule-label=release=kube-prometheus-stack" in args
    # The operator parses exactly what the chart renders.
    parsed = build_parser("operator").parse_args(args)
    render = operator_settings(parsed, environ={}).render
    assert render.rule_labels == {"release": "kube-prometheus-stack"}
    assert render.series_namespace_label == "namespace"
    (rule,) = find(docs, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_without_honor_labels_the_operator_selects_exported_namespace(helm: Path) -> None:
    docs = documents(
        template(helm, VALUE_SETS["monitoring"], "metrics.serviceMonitor.honorLabels=false")
    )
    args = operator_args(docs)
    assert "--series-namespace-label=exported_namespace" in args
    parsed = build_parser("operator").parse_args(args)
    assert operator_settings(parsed, environ={}).render.series_namespace_label == (
        "exported_namespace"
    )
    monitors = {m["metadata"]["name"]: m for m in find(docs, "ServiceMonitor")}
    operator = monitors["sleuth-operator"]
    assert [e["honorLabels"] for e in operator["spec"]["endpoints"]] == [False]
    (rule,) = find(docs, "PrometheusRule")
    rules = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    not_ready = next(r for r in rules if r["alert"] == "SleuthResourceNotReady")
    assert "$labels.exported_namespace" in not_ready["annotations"]["description"]
    assert "$labels.namespace" not in not_ready["annotations"]["description"]
    # The default keeps honorLabels and passes no flag.
    default = documents(template(helm, VALUE_SETS["monitoring"]))
    assert not any(a.startswith("--series-namespace-label") for a in operator_args(default))


@pytest.mark.parametrize(
    ("sets", "want"),
    [
        ((), {"any": True}),
        (("watchNamespaces={team-a}",), {"matchNames": ["team-a"]}),
        (("metrics.serviceMonitor.namespaceSelector.matchNames={team-a,team-b}",),
         {"matchNames": ["team-a", "team-b"]}),
        (("metrics.serviceMonitor.namespaceSelector.any=true", "watchNamespaces={team-a}"),
         {"any": True}),
    ],
)  # fmt: skip
def test_the_workload_monitors_namespace_selection_is_configurable(
    helm: Path, sets: tuple[str, ...], want: dict[str, object]
) -> None:
    docs = documents(template(helm, VALUE_SETS["monitoring"], *sets))
    monitors = [
        m for m in find(docs, "ServiceMonitor") if m["metadata"]["name"] != "sleuth-operator"
    ]
    assert len(monitors) == 3
    for monitor in monitors:
        assert monitor["spec"]["namespaceSelector"] == want, monitor["metadata"]["name"]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (("metrics.prometheusRule.labels.app\\.kubernetes\\.io/part-of=x",),
         "metrics.prometheusRule.labels: app.kubernetes.io/part-of"),
        (("metrics.serviceMonitor.namespaceSelector.names={a}",), "names"),
        (("metrics.serviceMonitor.honorLabels=maybe",), "honorLabels"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_key(
    helm: Path, sets: tuple[str, ...], message: str
) -> None:
    args = ["template", "sleuth", str(Path(__file__).parents[2] / "charts" / "sleuth")]
    for s in sets:
        args += ["--set", s]
    proc = run_helm(helm, *args, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
