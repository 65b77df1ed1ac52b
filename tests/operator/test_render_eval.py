"""An EvalSchedule renders exactly the checked-in CronJob and PrometheusRule (golden files).

Regenerate after an intended change with ``SLEUTH_UPDATE_GOLDEN=1 pytest tests/operator`` and
review the diff.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import pytest
import yaml
from operator_testkit import GOLDEN

from sleuth.api.v1alpha1 import EvalScheduleSpec
from sleuth.api.v1alpha1.common import SecretKeyRef
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalrules import SCORE_ALERTS, render_eval_rules
from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob

pytestmark = pytest.mark.unit

SETTINGS = RenderSettings(sleuth_image="ghcr.io/sleuth-dev/sleuth:0.1.0")
NS = "team-a"
OWNER = Owner(kind="EvalSchedule", name="contracts-nightly", namespace=NS, uid="uid-nightly")
TARGET = EvalTarget(
    agent="contracts",
    model_endpoint="http://contracts-model.team-a.svc:8000/v1",
    model="meta-llama/Llama-3.1-70B-Instruct",
)
SPEC: dict[str, Any] = {
    "agentRef": {"name": "contracts"},
    "schedule": "0 */6 * * *",
    "dataset": {"configMapRef": {"name": "contracts-golden", "key": "golden_contracts.jsonl"}},
}


def _spec(**over: Any) -> EvalScheduleSpec:
    return EvalScheduleSpec.model_validate({**SPEC, **over})


def _rendered() -> dict[str, dict[str, Any]]:
    spec = _spec()
    return {
        "eval-cronjob": render_eval_cronjob(OWNER, spec, TARGET, SETTINGS),
        "eval-rules": render_eval_rules(OWNER, spec, SETTINGS),
    }


@pytest.mark.parametrize("part", ["eval-cronjob", "eval-rules"])
def test_render_matches_golden(part: str) -> None:
    text = yaml.safe_dump(_rendered()[part], sort_keys=True, width=100)
    path = GOLDEN / f"{part}.yaml"
    if os.environ.get("SLEUTH_UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{path} differs from the renderer's output"


def _containers(cronjob: dict[str, Any]) -> dict[str, dict[str, Any]]:
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return {c["name"]: c for c in pod["containers"]}


def _parse_eval_args(args: list[str]) -> argparse.Namespace:
    """Parse the container's arguments with the real `sleuth` CLI parser (no guessed flags)."""
    from sleuth.cli import build_parser

    return build_parser("eval").parse_args(args)


def test_cronjob_runs_the_eval_cli_against_the_agent_service() -> None:
    cronjob = _rendered()["eval-cronjob"]
    spec = cronjob["spec"]
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["schedule"] == "0 */6 * * *"
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    assert spec["startingDeadlineSeconds"] == 600
    job = spec["jobTemplate"]["spec"]
    assert (job["backoffLimit"], job["activeDeadlineSeconds"]) == (1, 3600)
    ragas = _parse_eval_args(_containers(cronjob)["ragas"]["args"])
    assert ragas.agent_url == "http://contracts-agent.team-a.svc:8080"
    assert str(ragas.golden) == "/var/lib/sleuth/dataset/golden_contracts.jsonl"
    assert (ragas.split, ragas.final_report) == ("test", True)
    assert ragas.judge_url == TARGET.model_endpoint  # the judge defaults to the agent's model
    assert ragas.judge_model == TARGET.model
    assert ragas.metrics == "faithfulness,answer_relevancy,context_precision,context_recall"
    assert "faithfulness=0.8" in ragas.threshold
    assert str(ragas.out).startswith("/var/lib/sleuth/results/")
    tsa = _parse_eval_args(_containers(cronjob)["tsa"]["args"])
    assert (tsa.endpoint, tsa.model, tsa.agent_client) == (
        TARGET.model_endpoint,
        TARGET.model,
        True,
    )
    assert "tool_selection_accuracy=0.85" in tsa.threshold


def test_dataset_is_mounted_read_only() -> None:
    pvc = {"claimName": "evals", "path": "golden/contracts.jsonl"}
    cronjob = render_eval_cronjob(
        OWNER, _spec(dataset={"persistentVolumeClaim": pvc}), TARGET, SETTINGS
    )
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    volume = next(v for v in pod["volumes"] if v["name"] == "dataset")
    assert volume["persistentVolumeClaim"] == {"claimName": "evals", "readOnly": True}
    for container in pod["containers"]:
        mount = next(m for m in container["volumeMounts"] if m["name"] == "dataset")
        assert mount["readOnly"] is True
    args = _parse_eval_args(_containers(cronjob)["ragas"]["args"])
    assert str(args.golden) == "/var/lib/sleuth/dataset/golden/contracts.jsonl"


def test_explicit_judge_and_its_key() -> None:
    judge = {
        "endpoint": "http://judge.evals.svc:8000/v1",
        "model": "Qwen/Qwen2.5-72B-Instruct",
        "apiKeySecretRef": {"name": "judge", "key": "api-key"},
    }
    target = EvalTarget(**{**TARGET.__dict__, "model_api_key": SecretKeyRef(name="m", key="k")})
    cronjob = render_eval_cronjob(
        OWNER, _spec(judge=judge, metrics=["faithfulness"]), target, SETTINGS
    )
    containers = _containers(cronjob)
    assert list(containers) == ["ragas"]  # no TSA container when TSA is not scored
    args = _parse_eval_args(containers["ragas"]["args"])
    assert (args.judge_url, args.judge_model) == (judge["endpoint"], judge["model"])
    env = {e["name"]: e for e in containers["ragas"]["env"]}
    assert env["SLEUTH_EVAL_API_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "judge",
        "key": "api-key",
    }


def test_suspend_and_history_limits_come_from_the_spec() -> None:
    spec = _spec(suspend=True, successfulJobsHistoryLimit=7, failedJobsHistoryLimit=0)
    cron = render_eval_cronjob(OWNER, spec, TARGET, SETTINGS)["spec"]
    assert (
        cron["suspend"],
        cron["successfulJobsHistoryLimit"],
        cron["failedJobsHistoryLimit"],
    ) == (
        True,
        7,
        0,
    )


def test_faithfulness_alert_is_the_seed_rule() -> None:
    rules = {r["alert"]: r for r in _rendered()["eval-rules"]["spec"]["groups"][0]["rules"]}
    rule = rules["RAGFaithfulnessLow"]
    assert rule["expr"] == (
        'avg_over_time(rag_faithfulness_score{namespace="team-a", agent="contracts", '
        'eval_schedule="contracts-nightly"}[30m]) < 0.8'
    )
    assert rule["for"] == "10m"
    assert rule["labels"]["severity"] == "warning"
    assert rule["annotations"]["runbook_url"].endswith("/docs/runbooks/RAGFaithfulnessLow.md")
    assert set(rules) == {a.alert for a in SCORE_ALERTS}
    assert 'form="simple"' in rules["RAGContextPrecisionLow"]["expr"]
    assert rules["AgentToolSelectionAccuracyLow"]["expr"].startswith(
        "avg_over_time(agent_tool_selection_accuracy{"
    )


def test_thresholds_and_windows_come_from_the_spec() -> None:
    spec = _spec(
        thresholds={"faithfulness": 0.9},
        alerts={"window": "1m", "for": "30s"},
        metrics=["faithfulness"],
    )
    rules = render_eval_rules(OWNER, spec, SETTINGS)["spec"]["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == ["RAGFaithfulnessLow"]
    assert rules[0]["expr"].endswith("[1m]) < 0.9")
    assert rules[0]["for"] == "30s"
