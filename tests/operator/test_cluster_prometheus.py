"""A real Prometheus (Debian's package) scraping the operator, with its rendered rules loaded.

The operator runs on the host against the test control plane; the test reads the PrometheusRule
the operator created, writes its groups as a rules file and starts ``prometheus`` scraping the
operator's ``/metrics`` every second (``honor_labels``, as the chart's ServiceMonitor does).
The EvalSchedule shortens the alert windows through its spec, so that a low faithfulness pushed
through a status update turns ``RAGFaithfulnessLow`` pending, then firing, within seconds; a
failed run fires ``RAGEvalFailing``; a schedule that has never succeeded goes stale counted from
its creation (``RAGEvalStale``) until a run succeeds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

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

NAME = "bot-nightly"
GOOD = {
    "faithfulness": 0.95,
    "answerRelevancy": 0.9,
    "contextPrecision": 0.7,
    "contextRecall": 0.8,
    "toolSelectionAccuracy": 0.95,
}


@contextmanager
def prometheus(
    tmp_path: Path, operator_port: int, groups: list[dict[str, Any]]
) -> Iterator[Prometheus]:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}), encoding="utf-8")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "sleuth-operator",
                "honor_labels": True,
                "scrape_timeout": "1s",
                "static_configs": [{"targets": [f"127.0.0.1:{operator_port}"]}],
            }
        ],
    }
    with start_prometheus(tmp_path, config) as server:
        yield server


def _now() -> str:
    """Runs finish now: a run time far in the past would (rightly) fire RAGEvalStale."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _alert(
    prom: Prometheus, namespace: str, name: str, state: str, schedule: str = NAME
) -> dict[str, Any]:
    for a in prom.alerts(namespace, schedule):
        if a["labels"]["alertname"] == name and a["state"] == state:
            return a
    return {}


def test_low_faithfulness_goes_pending_then_firing_and_a_failed_run_fires(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    with metered_operator(kube, namespace, tmp_path / "operator.log") as (operator, port):
        apply(kube, namespace, AGENT)
        apply(kube, namespace, golden_configmap())
        apply(kube, namespace, schedule(NAME, alerts={"window": "20s", "for": "5s"}))
        rule = eventually(
            lambda: get(kube, namespace, f"prometheusrule/{NAME}-eval-alerts"),
            what="the PrometheusRule",
        )
        groups = rule["spec"]["groups"]
        loaded = {r["alert"] for g in groups for r in g["rules"]}
        assert {"RAGFaithfulnessLow", "RAGEvalFailing"} <= loaded

        # A good run first: Prometheus sees the scores, nothing alerts.
        patch_status(kube, namespace, NAME, run_status("run-1", _now(), GOOD))
        with prometheus(tmp_path, port, groups) as prom:
            where = f'namespace="{namespace}", eval_schedule="{NAME}"'
            eventually(
                lambda: prom.value(f"rag_faithfulness_score{{{where}}}") == 0.95,
                what="Prometheus scraped the good faithfulness",
            )
            assert prom.value(f"sleuth_eval_last_run_failed{{{where}}}") == 0
            assert prom.alerts(namespace, NAME) == []

            # A low faithfulness: its 20s average sinks below 0.80, pending for 5s, then firing.
            low = {**GOOD, "faithfulness": 0.5}
            patch_status(kube, namespace, NAME, run_status("run-2", _now(), low))
            pending = eventually(
                lambda: _alert(prom, namespace, "RAGFaithfulnessLow", "pending"),
                what="RAGFaithfulnessLow pending",
            )
            firing = eventually(
                lambda: _alert(prom, namespace, "RAGFaithfulnessLow", "firing"),
                what="RAGFaithfulnessLow firing",
            )
            assert pending["labels"] == firing["labels"]
            labels = firing["labels"]
            assert labels["severity"] == "warning"
            assert labels["agent"] == "bot"
            assert (labels["dataset"], labels["split"], labels["source"]) == (
                "golden",
                "test",
                "eval",
            )
            annotations = firing["annotations"]
            assert annotations["runbook_url"].endswith("/docs/runbooks/RAGFaithfulnessLow.md")
            assert annotations["summary"] == f"Faithfulness of agent {namespace}/bot is below 0.8."
            assert "rag_faithfulness_score" in annotations["description"]
            assert 0.5 <= float(firing["value"]) < 0.8  # the 20s average, not the raw score
            # Every other score is above its threshold: only faithfulness alerts.
            assert {a["labels"]["alertname"] for a in prom.alerts(namespace, NAME)} == {
                "RAGFaithfulnessLow"
            }

            # A failed run: RAGEvalFailing fires (no 'for'); the scores of the last success stay.
            patch_status(kube, namespace, NAME, run_status("run-3", _now()))
            failing = eventually(
                lambda: _alert(prom, namespace, "RAGEvalFailing", "firing"),
                what="RAGEvalFailing firing",
            )
            assert failing["labels"]["agent"] == "bot"
            assert failing["annotations"]["runbook_url"].endswith(
                "/docs/runbooks/RAGEvalFailing.md"
            )
            assert prom.value(f"rag_faithfulness_score{{{where}}}") == 0.5
        assert "Traceback" not in operator.text()


def test_a_schedule_that_never_succeeded_goes_stale_until_a_run_succeeds(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    with metered_operator(kube, namespace, tmp_path / "operator.log") as (_, port):
        apply(kube, namespace, AGENT)
        apply(kube, namespace, golden_configmap())
        apply(kube, namespace, schedule("lagging", alerts={"staleAfter": "15s"}))
        rule = eventually(
            lambda: get(kube, namespace, "prometheusrule/lagging-eval-alerts"),
            what="the PrometheusRule",
        )
        groups = rule["spec"]["groups"]
        with prometheus(tmp_path, port, groups) as prom:
            # No run yet: the last success is the creation time, 15 s later the schedule is stale.
            stale = eventually(
                lambda: _alert(prom, namespace, "RAGEvalStale", "firing", "lagging"),
                what="RAGEvalStale firing",
            )
            assert stale["labels"]["agent"] == "bot"
            assert stale["annotations"]["runbook_url"].endswith("/docs/runbooks/RAGEvalStale.md")
            assert float(stale["value"]) > 15
            # A run succeeds: the alert resolves (for the next 15 s).
            patch_status(kube, namespace, "lagging", run_status("run-1", _now(), GOOD))
            eventually(
                lambda: prom.alerts(namespace, "lagging") == [], what="RAGEvalStale resolved"
            )
