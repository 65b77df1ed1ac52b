"""The chart's dashboard and alerts query only series and label values named in sleuth.core.names.

The chart's JSON and YAML cannot import the names; these tests read the queries back and fail on a
series (or a ``source``/``form`` value) that sleuth.core.names does not hold, so a renamed series
breaks here and not silently in Grafana or Alertmanager. The operator's own EvalSchedule rules are
held to the same list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sleuth.core import names
from tests.charts.chart_testkit import CHART, VALUE_SETS, documents, find, template

# Series that Prometheus itself and kube-state-metrics export, which the operator's alerts watch.
EXTERNAL = {
    "up",
    "kube_deployment_status_replicas_available",
    "kube_pod_container_status_restarts_total",
}
_OPERATORS = {"and", "or", "unless", "bool", "offset"}
_GROUPING = r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)"
_SUFFIXES = ("_bucket", "_sum", "_count")


def series_of(expr: str) -> set[str]:
    """The series a PromQL expression reads (histogram suffixes removed)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", bare)
    bare = re.sub(_GROUPING, " ", bare)
    found = set()
    for token in re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", bare):
        if token in _OPERATORS:
            continue
        base = next((token[: -len(s)] for s in _SUFFIXES if token.endswith(s)), token)
        found.add(base if base in names.SERIES else token)
    return found


def label_values_of(expr: str) -> list[tuple[str, str]]:
    """``(label, value)`` of every matcher on a label whose values sleuth.core.names holds."""
    pairs = []
    for label, _op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', expr):
        if label in names.LABEL_VALUES:
            pairs += [(label, v) for v in value.split("|")]
    return pairs


def _unknown(exprs: list[str]) -> tuple[set[str], list[tuple[str, str]]]:
    series = set().union(*(series_of(e) for e in exprs)) - names.SERIES - EXTERNAL
    values = [
        (k, v) for e in exprs for k, v in label_values_of(e) if v not in names.LABEL_VALUES[k]
    ]
    return series, values


@pytest.mark.unit
def test_the_query_reader_finds_series_and_label_values() -> None:
    expr = (
        "histogram_quantile(0.95, sum by (agent, le) "
        '(rate(sleuth_agent_request_seconds_bucket{agent=~"$a"}[5m])))'
        ' / on (agent) rag_context_precision_score{form="simple", source!="online|eval"} > bool 0'
    )
    assert series_of(expr) == {"sleuth_agent_request_seconds", "rag_context_precision_score"}
    assert label_values_of(expr) == [("form", "simple"), ("source", "online"), ("source", "eval")]
    assert _unknown(['rag_faithfulness_scor{source="live"}']) == (
        {"rag_faithfulness_scor"},
        [("source", "live")],
    )


def _dashboard_queries(dashboard: dict[str, Any]) -> list[str]:
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        if isinstance(query, dict):
            exprs += re.findall(r"label_values\(([^,)]+)", query.get("query", ""))
    return exprs


@pytest.mark.unit
def test_dashboard_queries_named_series() -> None:
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text(encoding="utf-8"))
    exprs = _dashboard_queries(dashboard)
    queried = set().union(*(series_of(e) for e in exprs))
    assert len(queried & names.SERIES) >= 15, sorted(queried)
    assert _unknown(exprs) == (set(), [])


@pytest.mark.integration
def test_chart_alerts_query_named_series(helm: Path) -> None:
    (rule,) = find(documents(template(helm, VALUE_SETS["monitoring"])), "PrometheusRule")
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    queried = set().union(*(series_of(e) for e in exprs))
    assert {names.OPERATOR_READY, names.OPERATOR_RECONCILES} <= queried
    assert _unknown(exprs) == (set(), [])


@pytest.mark.unit
def test_eval_schedule_rules_query_named_series() -> None:
    from sleuth.core.api.v1alpha1 import EvalScheduleSpec
    from sleuth.operator.render import Owner, RenderSettings
    from sleuth.operator.render.evalrules import render_eval_rules

    spec = EvalScheduleSpec.model_validate(
        {
            "agentRef": {"name": "a"},
            "schedule": "0 3 * * *",
            "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
            "alerts": {"onlineScores": True},
        }
    )
    owner = Owner(kind="EvalSchedule", name="nightly", namespace="ns", uid="u")
    rule = render_eval_rules(owner, spec, RenderSettings())
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    queried = set().union(*(series_of(e) for e in exprs))
    assert {
        names.FAITHFULNESS_SCORE,
        names.LAST_RUN_FAILED,
        names.LAST_SUCCESS_TIMESTAMP,
    } <= queried
    assert _unknown(exprs) == (set(), [])
    assert ("source", "online") in [p for e in exprs for p in label_values_of(e)]


@pytest.mark.unit
def test_every_named_series_is_exported() -> None:
    """No dead names: each series is exported by the agent or the operator."""
    from prometheus_client import CollectorRegistry

    from sleuth.agent.metrics import AgentMetrics
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
    assert exported >= names.SERIES, sorted(names.SERIES - exported)
