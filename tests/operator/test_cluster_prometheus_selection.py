"""The EvalSchedule alerts on a Prometheus configured the way kube-prometheus-stack configures it.

kube-prometheus-stack's Prometheus loads only the PrometheusRules whose labels match its
``ruleSelector`` (``release: <its release>``), in the namespaces its ``ruleNamespaceSelector``
selects, and scrapes only the ServiceMonitors its ``serviceMonitorSelector`` matches. Here:

- the chart is rendered with the values docs/install.md gives (``metrics.prometheusRule.labels``
  and ``metrics.serviceMonitor.labels`` = ``release: kps``); the operator runs on the host with the
  arguments the chart gives it, against the real control plane;
- the PrometheusRules are selected from the apiserver by the Prometheus object's selectors exactly
  as prometheus-operator selects them (:mod:`tests.operator.prometheus_selection`; prometheus-
  operator itself does not run here), written as rule files and loaded into a real Prometheus
  (Debian's), which scrapes the operator as the selected ServiceMonitor says (honorLabels and
  all; only the target's discovery is replaced by its host address).

Proven: without the rule labels the EvalSchedule's rule is not selected (the issue's bug); with
them it is, and ``RAGFaithfulnessLow`` loads and fires on a low score; a rule without the label in
the same namespace, and the labelled rule in a namespace outside ``ruleNamespaceSelector``, are
not loaded. With ``metrics.serviceMonitor.honorLabels=false`` (Prometheus stores the operator's
``namespace`` as ``exported_namespace``) the alert still fires, and names the agent's namespace.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.charts.chart_testkit import (
    RELEASE_NAMESPACE,
    VALUE_SETS,
    documents,
    find,
    helm_binary,
    operator_args,
    template,
)
from tests.operator.eval_metrics_kit import (
    AGENT,
    apply,
    get,
    metered_operator,
    patch_status,
    run_status,
    schedule,
)
from tests.operator.prometheus_kit import PROMETHEUS, Prometheus, start_prometheus
from tests.operator.prometheus_selection import (
    rule_files,
    scrape_job,
    selected_monitors,
    selected_rules,
)
from tests.operator.test_cluster_prometheus import GOOD, _now
from tests.support.golden import golden_configmap
from tests.support.polling import eventually

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(PROMETHEUS).exists() and os.environ.get("CI") != "true",
        reason="prometheus is not installed (make promtool)",
    ),
]

NAME = "nightly"
RELEASE = "kps"
MONITORED = "sleuth-test-monitored"
# The Prometheus object as kube-prometheus-stack renders it for release "kps" (its
# ruleNamespaceSelector is {} by default, every namespace; here it selects by a label, so that
# leaving a namespace out can be shown).
KPS_PROMETHEUS = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "Prometheus",
    "metadata": {"name": f"{RELEASE}-prometheus", "namespace": "monitoring"},
    "spec": {
        "ruleSelector": {"matchLabels": {"release": RELEASE}},
        "ruleNamespaceSelector": {"matchLabels": {MONITORED: "true"}},
        "serviceMonitorSelector": {"matchLabels": {"release": RELEASE}},
        "serviceMonitorNamespaceSelector": {},
    },
}
# What docs/install.md tells a kube-prometheus-stack user to set.
KPS_VALUES = (
    "metrics.serviceMonitor.enabled=true",
    "metrics.prometheusRule.enabled=true",
    f"metrics.serviceMonitor.labels.release={RELEASE}",
    f"metrics.prometheusRule.labels.release={RELEASE}",
)
MONITORING_FLAGS = ("--prometheus-rule-label", "--series-namespace-label")


def _chart(*sets: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The operator's monitoring flags and the ServiceMonitors of the chart rendered with
    ``sets`` (the chart's defaults otherwise)."""
    docs = documents(template(helm_binary(), VALUE_SETS["default"], *sets))
    flags = [a for a in operator_args(docs) if a.startswith(MONITORING_FLAGS)]
    return flags, find(docs, "ServiceMonitor")


def _rule_names(rules: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in rules}


def _alert(prom: Prometheus, namespace: str, state: str) -> dict[str, Any]:
    for a in prom.alerts(namespace, NAME):
        if a["labels"]["alertname"] == "RAGFaithfulnessLow" and a["state"] == state:
            return a
    return {}


def _setup(kube: Any, namespace: str, other: str) -> None:
    kube.kubectl("label", "namespace", namespace, f"{MONITORED}=true")
    apply(kube, namespace, AGENT)
    apply(kube, namespace, golden_configmap())
    apply(kube, namespace, schedule(NAME, alerts={"window": "20s", "for": "5s"}))
    kube.kubectl("create", "namespace", other)


def _copies(kube: Any, rule: dict[str, Any], namespace: str, other: str) -> None:
    """Two rules that must not load: the same rule without the label in the selected namespace,
    and with the label in a namespace the ruleNamespaceSelector leaves out."""
    for ns, name, labels in [
        (namespace, "handmade", {}),
        (other, "elsewhere", {"release": RELEASE}),
    ]:
        groups = copy.deepcopy(rule["spec"]["groups"])
        for g in groups:
            g["name"] = f"{name}.{g['name']}"
        doc = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {"name": name, "labels": labels},
            "spec": {"groups": groups},
        }
        kube.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump(doc))


def _prometheus_config(
    kube: Any, tmp_path: Path, monitors: list[dict[str, Any]], port: int, namespaces: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rules = selected_rules(kube, KPS_PROMETHEUS, namespaces)
    (monitor,) = [
        m
        for m in selected_monitors(KPS_PROMETHEUS, monitors)
        if m["metadata"]["name"] == "sleuth-operator"
    ]
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": rule_files(rules, tmp_path / "rules"),
        "scrape_configs": [scrape_job(monitor, "sleuth-operator", f"127.0.0.1:{port}")],
    }
    return config, rules


def test_the_release_label_makes_the_alerts_load_and_fire_on_kube_prometheus_stack(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    other = f"{namespace}-other"
    _setup(kube, namespace, other)
    rule_name = f"{NAME}-eval-alerts"
    try:
        # The chart's defaults (no rule labels): the rule is made, and not selected.
        flags, _ = _chart("metrics.serviceMonitor.enabled=true")
        assert flags == []
        with metered_operator(kube, namespace, tmp_path / "before.log", *flags):
            rule = eventually(
                lambda: get(kube, namespace, f"prometheusrule/{rule_name}"), what="the rule"
            )
            assert "release" not in rule["metadata"]["labels"]
            assert selected_rules(kube, KPS_PROMETHEUS, [namespace]) == []

        # The values docs/install.md gives: the operator labels the rule, which is selected.
        flags, monitors = _chart(*KPS_VALUES)
        assert flags == [f"--prometheus-rule-label=release={RELEASE}"]
        with metered_operator(kube, namespace, tmp_path / "after.log", *flags) as (_, port):
            rule = eventually(
                lambda: (
                    (r := get(kube, namespace, f"prometheusrule/{rule_name}"))
                    and r["metadata"]["labels"].get("release") == RELEASE
                    and r
                ),
                what="the rule labelled release=kps",
            )
            _copies(kube, rule, namespace, other)
            config, rules = _prometheus_config(kube, tmp_path, monitors, port, [namespace, other])
            assert _rule_names(rules) == {(namespace, rule_name)}
            patch_status(kube, namespace, NAME, run_status("run-1", _now(), GOOD))
            with start_prometheus(tmp_path, config) as prom:
                group = f"sleuth-eval.{namespace}.{NAME}"
                loaded = eventually(prom.rule_groups, what="rule groups loaded")
                assert loaded == [group], loaded  # neither copy
                where = f'namespace="{namespace}", eval_schedule="{NAME}"'
                eventually(
                    lambda: prom.value(f"rag_faithfulness_score{{{where}}}") == 0.95,
                    what="the operator's scores scraped",
                )
                assert prom.alerts(namespace, NAME) == []
                low = {**GOOD, "faithfulness": 0.5}
                patch_status(kube, namespace, NAME, run_status("run-2", _now(), low))
                firing = eventually(
                    lambda: _alert(prom, namespace, "firing"), 90, "RAGFaithfulnessLow firing"
                )
                assert firing["labels"]["namespace"] == namespace
                assert firing["labels"]["agent"] == "bot"
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_without_honor_labels_the_alert_still_fires_for_the_agents_namespace(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    other = f"{namespace}-other"
    _setup(kube, namespace, other)
    try:
        flags, monitors = _chart(*KPS_VALUES, "metrics.serviceMonitor.honorLabels=false")
        assert sorted(flags) == [
            f"--prometheus-rule-label=release={RELEASE}",
            "--series-namespace-label=exported_namespace",
        ]
        with metered_operator(kube, namespace, tmp_path / "operator.log", *flags) as (_, port):
            eventually(
                lambda: (
                    (r := get(kube, namespace, f"prometheusrule/{NAME}-eval-alerts"))
                    and r["metadata"]["labels"].get("release") == RELEASE
                ),
                what="the rule labelled release=kps",
            )
            config, rules = _prometheus_config(kube, tmp_path, monitors, port, [namespace])
            assert len(rules) == 1
            assert config["scrape_configs"][0]["honor_labels"] is False
            patch_status(
                kube, namespace, NAME, run_status("run-1", _now(), {**GOOD, "faithfulness": 0.5})
            )
            with start_prometheus(tmp_path, config) as prom:
                # The scrape's namespace is the operator's; the EvalSchedule's is exported_.
                ours = f'exported_namespace="{namespace}", eval_schedule="{NAME}"'
                eventually(
                    lambda: prom.value(f"rag_faithfulness_score{{{ours}}}") == 0.5,
                    what="the score scraped without honorLabels",
                )
                assert prom.value(f'rag_faithfulness_score{{namespace="{namespace}"}}') is None
                assert (
                    prom.value(f'rag_faithfulness_score{{namespace="{RELEASE_NAMESPACE}"}}') == 0.5
                )
                firing = eventually(
                    lambda: _alert(prom, namespace, "firing"), 90, "RAGFaithfulnessLow firing"
                )
                assert firing["labels"]["namespace"] == namespace
                assert firing["labels"]["exported_namespace"] == namespace
    finally:
        kube.kubectl("delete", "namespace", other, "--wait=false", check=False)
