"""What a platform's Prometheus needs of the EvalSchedules' PrometheusRules: the labels its
ruleSelector matches (``--prometheus-rule-label``) and the namespace label of the operator's
series when it is scraped without honorLabels (``--series-namespace-label``)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.core.cli import build_parser
from sleuth.operator.main import operator_settings
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import render_eval_rules

pytestmark = pytest.mark.unit

OWNER = Owner(kind="EvalSchedule", name="nightly", namespace="team-a", uid="uid")
SPEC = EvalScheduleSpec.model_validate(
    {
        "agentRef": {"name": "contracts"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    }
)


def _settings(*flags: str) -> RenderSettings:
    args = build_parser("operator").parse_args(["operator", *flags])
    return operator_settings(args, environ={}).render


def _rules(settings: RenderSettings) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = render_eval_rules(OWNER, SPEC, settings)["spec"]["groups"][0][
        "rules"
    ]
    return rules


def test_rule_labels_reach_every_evalschedule_rule_beside_the_operators_own() -> None:
    settings = _settings(
        "--prometheus-rule-label", "release=kube-prometheus-stack",
        "--prometheus-rule-label", "team=search",
    )  # fmt: skip
    assert settings.rule_labels == {"release": "kube-prometheus-stack", "team": "search"}
    labels = render_eval_rules(OWNER, SPEC, settings)["metadata"]["labels"]
    assert labels["release"] == "kube-prometheus-stack"
    assert labels["team"] == "search"
    assert labels["app.kubernetes.io/managed-by"] == "sleuth-operator"
    assert labels["sleuth.dev/agent"] == "contracts"
    # Without the flag: only the operator's labels (what a ruleSelector on release misses).
    plain = render_eval_rules(OWNER, SPEC, _settings())["metadata"]["labels"]
    assert "release" not in plain


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("release", "expected KEY=VALUE"),
        ("app.kubernetes.io/managed-by=me", "sets the app.kubernetes.io/"),
        ("sleuth.dev/agent=x", "sets the app.kubernetes.io/"),
        ("-bad=x", "label name"),
        ("Bad_Prefix/x=y", "DNS subdomain"),
        ("release=" + "v" * 64, "value must be"),
        ("release=a b", "value must be"),
    ],
)
def test_a_bad_rule_label_is_refused_naming_the_flag(flag: str, message: str) -> None:
    args = build_parser("operator").parse_args(["operator", f"--prometheus-rule-label={flag}"])
    with pytest.raises(SystemExit, match=rf"--prometheus-rule-label: .*{re.escape(message)}"):
        operator_settings(args, environ={})


def test_without_honor_labels_the_rules_select_exported_namespace_and_alert_by_namespace() -> None:
    rules = _rules(_settings("--series-namespace-label", "exported_namespace"))
    by_name = {(r["alert"], r["labels"].get("source")): r for r in rules}
    for key in [("RAGFaithfulnessLow", None), ("RAGEvalFailing", None), ("RAGEvalStale", None)]:
        rule = by_name[key]
        assert 'exported_namespace="team-a"' in rule["expr"], rule["expr"]
        assert ' namespace="team-a"' not in rule["expr"]
        assert not rule["expr"].startswith('namespace="')
        # The scrape's namespace is the operator's: the alert carries the agent's back.
        assert rule["labels"]["namespace"] == "team-a"
    # The online twin reads the agent pods' own series, whose namespace is theirs.
    online = by_name[("RAGFaithfulnessLow", "online")]
    assert 'namespace="team-a"' in online["expr"]
    assert "exported_namespace" not in online["expr"]
    assert "namespace" not in online["labels"]
    # The default (honorLabels): the series keep namespace, the labels are the renderer's own.
    default = {(r["alert"], r["labels"].get("source")): r for r in _rules(_settings())}
    assert "exported_namespace" not in default[("RAGFaithfulnessLow", None)]["expr"]
    assert "namespace" not in default[("RAGFaithfulnessLow", None)]["labels"]
    assert dataclasses.replace(_settings(), series_namespace_label="namespace") == _settings()


def test_a_bad_series_namespace_label_is_refused_naming_the_flag() -> None:
    args = build_parser("operator").parse_args(
        ["operator", "--series-namespace-label", "kubernetes_namespace"]
    )
    with pytest.raises(SystemExit, match=r"--series-namespace-label: .*exported_namespace"):
        operator_settings(args, environ={})
