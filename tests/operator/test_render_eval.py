"""An EvalSchedule renders exactly the checked-in CronJob, ServiceAccount + Role + RoleBinding and
PrometheusRule (golden files); the pods report to status as their own account; Indexed Jobs.
What the rules say is in test_render_eval_rules.py.

Regenerate after an intended change with ``SLEUTH_UPDATE_GOLDEN=1 pytest tests/operator`` and
review the diff.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.core.api.v1alpha1 import EvalScheduleSpec
from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.evalschedule import RAGAS_METRICS, TSA_METRIC
from sleuth.evals.splits import parse_shard
from sleuth.operator.render import Owner, RenderSettings
from sleuth.operator.render.evalaccess import render_eval_access
from sleuth.operator.render.evalrules import render_eval_rules
from sleuth.operator.render.evalschedule import EvalTarget, render_eval_cronjob
from tests.operator.operator_testkit import GOLDEN

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
    "metrics": [*RAGAS_METRICS, TSA_METRIC],
    "toolSelection": {"configMapRef": {"name": "contracts-tsa", "key": "tsa_cases.jsonl"}},
}
SPEC["metrics"].remove("noiseSensitivity")


def _spec(**over: Any) -> EvalScheduleSpec:
    """SPEC with ``over``; its TSA cases only when TSA is scored (else the spec is refused)."""
    merged = {**SPEC, **over}
    if TSA_METRIC not in merged["metrics"]:
        merged.pop("toolSelection", None)
    return EvalScheduleSpec.model_validate(merged)


def _rendered() -> dict[str, dict[str, Any]]:
    spec = _spec()
    sharded = _spec(parallelism=4, metrics=["faithfulness", "toolSelectionAccuracy"])
    return {
        "eval-cronjob": render_eval_cronjob(OWNER, spec, TARGET, SETTINGS),
        "eval-cronjob-sharded": render_eval_cronjob(OWNER, sharded, TARGET, SETTINGS),
        "eval-access": {"items": render_eval_access(OWNER, "contracts")},
        "eval-rules": render_eval_rules(OWNER, spec, SETTINGS),
    }


@pytest.mark.parametrize(
    "part", ["eval-cronjob", "eval-cronjob-sharded", "eval-access", "eval-rules"]
)
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
    from sleuth.core.cli import build_parser

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
    assert ragas.timeout == 120  # spec.requestTimeoutSeconds
    tsa = _parse_eval_args(_containers(cronjob)["tsa"]["args"])
    assert (tsa.endpoint, tsa.model) == (TARGET.model_endpoint, TARGET.model)
    # the team's cases, scored with the agent's own first step read from the agent's Service
    assert str(tsa.cases) == "/var/lib/sleuth/tsa/tsa_cases.jsonl"
    assert tsa.agent_url == "http://contracts-agent.team-a.svc:8080"
    assert str(tsa.agent_token_file) == "/var/run/secrets/sleuth/agent/token"
    assert (tsa.split, tsa.final_report, tsa.timeout) == ("test", True, 120)
    assert "tool_selection_accuracy=0.85" in tsa.threshold


def test_the_tsa_cases_are_mounted_read_only_and_the_agent_token_too() -> None:
    claim = {"claimName": "team-evals", "path": "tsa/own.jsonl"}
    spec = _spec(toolSelection={"persistentVolumeClaim": claim, "split": "dev"})
    cronjob = render_eval_cronjob(OWNER, spec, TARGET, SETTINGS)
    pod = _pod(cronjob)
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tsa-cases"]["persistentVolumeClaim"] == {
        "claimName": "team-evals",
        "readOnly": True,
    }
    tsa = _containers(cronjob)["tsa"]
    mounts = {m["name"]: m for m in tsa["volumeMounts"]}
    assert mounts["tsa-cases"] == {
        "name": "tsa-cases",
        "mountPath": "/var/lib/sleuth/tsa",
        "readOnly": True,
    }
    assert mounts["agent-token"]["readOnly"] is True
    args = _parse_eval_args(tsa["args"])
    assert (str(args.cases), args.split) == ("/var/lib/sleuth/tsa/tsa/own.jsonl", "dev")


def test_request_timeout_and_report_claim_come_from_the_spec() -> None:
    spec = _spec(requestTimeoutSeconds=45, reports={"claimName": "eval-reports", "keepRuns": 3})
    cronjob = render_eval_cronjob(OWNER, spec, TARGET, SETTINGS)
    volumes = {v["name"]: v for v in _pod(cronjob)["volumes"]}
    assert volumes["results"] == {
        "name": "results",
        "persistentVolumeClaim": {"claimName": "eval-reports"},
    }
    for name, container in _containers(cronjob).items():
        args = _parse_eval_args(container["args"])
        folder = "/var/lib/sleuth/results/contracts-nightly/$(SLEUTH_EVAL_RUN_ID)"
        assert (str(args.out), str(args.html)) == (f"{folder}/{name}.json", f"{folder}/{name}.html")
        assert (args.keep_runs, args.timeout) == (3, 45)
        # $(SLEUTH_EVAL_RUN_ID) is expanded by the kubelet: the variable is the container's own
        assert "SLEUTH_EVAL_RUN_ID" in _env(container)


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


def _pod(cronjob: dict[str, Any]) -> dict[str, Any]:
    pod: dict[str, Any] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return pod


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container["env"]}


@pytest.mark.parametrize(
    ("metrics", "parallelism", "parts"),
    [
        (None, 1, 2),  # RAGAS metrics and TSA: a ragas and a tsa container
        (["faithfulness", "contextRecall"], 1, 1),
        (["toolSelectionAccuracy"], 3, 3),
        (None, 4, 8),
    ],
)
def test_each_container_reports_its_part_to_this_schedules_status(
    metrics: list[str] | None, parallelism: int, parts: int
) -> None:
    over: dict[str, Any] = {"parallelism": parallelism}
    if metrics is not None:
        over["metrics"] = metrics
    pod = _pod(render_eval_cronjob(OWNER, _spec(**over), TARGET, SETTINGS))
    assert pod["serviceAccountName"] == "contracts-nightly-eval"
    assert pod["automountServiceAccountToken"] is True
    assert pod["containers"]
    for container in pod["containers"]:
        env = _env(container)
        assert env["SLEUTH_EVAL_STATUS"]["value"] == "team-a/contracts-nightly"
        assert env["SLEUTH_EVAL_EXPECT_PARTS"]["value"] == str(parts)
        assert env["SLEUTH_EVAL_RUN_ID"]["valueFrom"] == {
            "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-name']"}
        }


def test_parallelism_makes_an_indexed_job_whose_pods_score_one_shard_each() -> None:
    cronjob = render_eval_cronjob(OWNER, _spec(parallelism=4), TARGET, SETTINGS)
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert (job["completionMode"], job["completions"], job["parallelism"]) == ("Indexed", 4, 4)
    for name, container in _containers(cronjob).items():
        args = container["args"]
        assert args[args.index("--shard") + 1] == "$(JOB_COMPLETION_INDEX)/4", name
        # What the kubelet hands pod 3 after expanding $(JOB_COMPLETION_INDEX):
        expanded = [a.replace("$(JOB_COMPLETION_INDEX)", "3") for a in args]
        assert parse_shard(_parse_eval_args(expanded).shard) == (3, 4)


def test_one_pod_runs_a_plain_job_over_the_whole_set() -> None:
    cronjob = _rendered()["eval-cronjob"]
    job = cronjob["spec"]["jobTemplate"]["spec"]
    assert not {"completionMode", "completions", "parallelism"} & set(job)
    for container in _containers(cronjob).values():
        assert _parse_eval_args(container["args"]).shard is None


def test_the_pods_may_patch_only_this_schedules_status() -> None:
    account, role, binding = render_eval_access(OWNER, "contracts")
    assert [m["kind"] for m in (account, role, binding)] == [
        "ServiceAccount",
        "Role",
        "RoleBinding",
    ]
    assert {m["metadata"]["name"] for m in (account, role, binding)} == {"contracts-nightly-eval"}
    assert role["rules"] == [
        {
            "apiGroups": ["sleuth.dev"],
            "resources": ["evalschedules"],
            "resourceNames": ["contracts-nightly"],
            "verbs": ["get"],
        },
        {
            "apiGroups": ["sleuth.dev"],
            "resources": ["evalschedules/status"],
            "resourceNames": ["contracts-nightly"],
            "verbs": ["get", "patch"],
        },
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "contracts-nightly-eval",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "contracts-nightly-eval", "namespace": NS}
    ]
    for manifest in (account, role, binding):
        meta = manifest["metadata"]
        assert meta["namespace"] == NS
        assert meta["ownerReferences"][0]["uid"] == OWNER.uid
        # the labels the reconcile prunes by, like the CronJob's
        assert meta["labels"]["app.kubernetes.io/instance"] == "contracts-nightly"
        assert meta["labels"]["app.kubernetes.io/component"] == "eval"
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "sleuth-operator"


@settings(max_examples=30, deadline=None)
@given(
    metrics=st.lists(st.sampled_from([*RAGAS_METRICS, TSA_METRIC]), min_size=1, unique=True),
    parallelism=st.integers(1, 64),
    suspend=st.booleans(),
    online=st.booleans(),
    schedule=st.sampled_from(["0 */6 * * *", "*/5 * * * *", "0 3 * * MON-FRI", "0 0 30 2 *"]),
)
def test_any_spec_renders_deterministically_and_every_child_is_owned(
    metrics: list[str], parallelism: int, suspend: bool, online: bool, schedule: str
) -> None:
    def render() -> list[dict[str, Any]]:
        spec = _spec(
            metrics=metrics,
            parallelism=parallelism,
            suspend=suspend,
            schedule=schedule,
            alerts={"onlineScores": online},
        )
        return [
            render_eval_cronjob(OWNER, spec, TARGET, SETTINGS),
            *render_eval_access(OWNER, "contracts"),
            render_eval_rules(OWNER, spec, SETTINGS),
        ]

    first = render()
    assert first == render()
    for child in first:
        meta = child["metadata"]
        assert meta["ownerReferences"] == [OWNER.reference()]
        assert meta["labels"]["app.kubernetes.io/instance"] == OWNER.name
        assert meta["labels"]["app.kubernetes.io/component"] == "eval"
    pod = _pod(first[0])
    parts = {e["value"] for c in pod["containers"] for e in c["env"] if e["name"].endswith("PARTS")}
    assert parts == {str(len(pod["containers"]) * parallelism)}
    alerts = [r["alert"] for r in first[-1]["spec"]["groups"][0]["rules"]]
    assert "RAGEvalFailing" in alerts
    assert ("RAGEvalStale" in alerts) == (not suspend and schedule != "0 0 30 2 *")


@pytest.mark.parametrize(
    ("dataset", "label"),
    [
        ({"configMapRef": {"name": "g", "key": "golden_contracts.jsonl"}}, "golden_contracts"),
        ({"persistentVolumeClaim": {"claimName": "g", "path": "sets/q4.jsonl"}}, "q4"),
        ({"configMapRef": {"name": "g", "key": "x.jsonl"}, "name": "contracts-q4"}, "contracts-q4"),
    ],
)
def test_both_containers_label_their_scores_with_the_golden_set(
    dataset: dict[str, Any], label: str
) -> None:
    """The ragas and tsa parts of one run report the same 'dataset' (else the TSA cases' file)."""
    cronjob = render_eval_cronjob(OWNER, _spec(dataset=dataset), TARGET, SETTINGS)
    containers = _containers(cronjob)
    assert {_parse_eval_args(c["args"]).dataset for c in containers.values()} == {label}
    assert set(containers) == {"ragas", "tsa"}
