"""EvalSchedule results on the operator's /metrics, from status, in the real control plane.

The operator runs on the host with ``--metrics-port``; the status is written the way the eval
pods write it (the status subresource), and once by the eval subcommand itself run on the host;
a restarted operator exports the same values.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.operator.eval_metrics_kit import (
    AGENT,
    apply,
    eval_series,
    get,
    metered_operator,
    patch_status,
    run_status,
    schedule,
)
from tests.operator.operator_testkit import OperatorProcess
from tests.support.golden import golden_configmap
from tests.support.metrics import scrape
from tests.support.polling import eventually

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def metered(
    kube: Any, namespace: str, crds: None, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[OperatorProcess, int]]:
    with metered_operator(kube, namespace, tmp_path / "operator.log") as running:
        yield running
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(f"--- operator log ---\n{running[0].text()[-8000:]}")


def test_status_results_are_exported_and_survive_a_restart(
    kube: Any, namespace: str, metered: tuple[OperatorProcess, int]
) -> None:
    proc, port = metered
    apply(kube, namespace, AGENT)
    apply(kube, namespace, golden_configmap())
    apply(kube, namespace, schedule("bot-nightly"))
    created = _ts(get(kube, namespace, "evalschedule/bot-nightly")["metadata"]["creationTimestamp"])
    base = frozenset({("namespace", namespace), ("agent", "bot"), ("eval_schedule", "bot-nightly")})

    # Before any run: the last success is the creation time, nothing failed, no scores.
    before = {
        ("sleuth_eval_last_success_timestamp_seconds", base): created,
        ("sleuth_eval_last_run_failed", base): 0.0,
    }
    eventually(
        lambda: eval_series(scrape(port), namespace) == before,
        what="creation time as last success, failed 0",
    )

    # A run completes: its pods write the results into status.
    finished = "2026-11-29T03:04:05Z"
    patch_status(
        kube,
        namespace,
        "bot-nightly",
        run_status(
            "bot-nightly-eval-1",
            finished,
            {
                "faithfulness": 0.72,
                "answerRelevancy": 0.9,
                "contextPrecision": 0.65,
                "contextRecall": 0.8,
                "toolSelectionAccuracy": 0.95,
            },
        ),
    )
    scores = base | {("dataset", "golden"), ("split", "test"), ("source", "eval")}
    after = {
        ("rag_faithfulness_score", scores): 0.72,
        ("rag_answer_relevancy_score", scores): 0.9,
        ("rag_context_precision_score", scores | {("form", "simple")}): 0.65,
        ("rag_context_recall_score", scores): 0.8,
        ("agent_tool_selection_accuracy", scores): 0.95,
        ("sleuth_eval_last_run_timestamp_seconds", base): _ts(finished),
        ("sleuth_eval_last_success_timestamp_seconds", base): _ts(finished),
        ("sleuth_eval_last_run_failed", base): 0.0,
        ("sleuth_eval_last_run_rows", base): 40.0,
        ("sleuth_eval_last_run_failed_rows", base): 1.0,
    }
    eventually(
        lambda: eval_series(scrape(port), namespace) == after, what="the run's results exported"
    )

    # The run's status write did not disturb the operator's own conditions.
    def ready() -> bool:
        status = get(kube, namespace, "evalschedule/bot-nightly").get("status") or {}
        conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
        return conditions.get("Ready") == "True"

    eventually(ready, what="the EvalSchedule stays (or is back) Ready after the status write")

    # A restarted operator exports the same values, read back from status.
    proc.stop()
    assert eval_series(scrape(port), namespace) == {}
    proc.start()
    eventually(
        lambda: eval_series(scrape(port), namespace) == after,
        what="the same values after a restart",
    )

    # A failed run: failed is 1, the last success and its scores stay.
    failed_at = "2026-11-30T03:05:00Z"
    patch_status(kube, namespace, "bot-nightly", run_status("bot-nightly-eval-2", failed_at))
    failing = {
        **after,
        ("sleuth_eval_last_run_failed", base): 1.0,
        ("sleuth_eval_last_run_timestamp_seconds", base): _ts(failed_at),
    }
    eventually(
        lambda: eval_series(scrape(port), namespace) == failing, what="the failed run exported"
    )

    # Deleting the schedule removes its series.
    kube.kubectl("delete", "evalschedule", "bot-nightly", "-n", namespace)
    eventually(
        lambda: (s := scrape(port)) and eval_series(s, namespace) == {},
        what="no series left for the deleted schedule",
    )
    assert "Traceback" not in proc.text()


def test_a_status_write_of_the_runs_does_not_reconcile_again(
    kube: Any, namespace: str, crds: None, tmp_path: Path
) -> None:
    """The pods' status writes reach /metrics from the watch event alone: no reconcile (which
    would apply the CronJob and rules again) per write. The resync is pushed out of the way."""
    log = tmp_path / "operator.log"
    with metered_operator(kube, namespace, log, "--resync-seconds", "3600") as (_, port):
        apply(kube, namespace, schedule("lonely"))  # no agent: one reconcile, AgentNotFound

        def reconciles() -> float:
            key = frozenset({("kind", "EvalSchedule"), ("outcome", "success")})
            return scrape(port).get(("sleuth_operator_reconcile_total", key), 0.0)

        def not_found() -> bool:
            status = get(kube, namespace, "evalschedule/lonely").get("status") or {}
            return any(c["reason"] == "AgentNotFound" for c in status.get("conditions") or [])

        eventually(not_found, what="Ready=False AgentNotFound")
        before = eventually(reconciles, what="the first reconcile counted")

        base = frozenset({("namespace", namespace), ("agent", "bot"), ("eval_schedule", "lonely")})
        scores = base | {("dataset", "golden"), ("split", "test"), ("source", "eval")}
        faithfulness = ("rag_faithfulness_score", scores)
        for run, value in (("run-1", 0.6), ("run-2", 0.7)):
            patch_status(
                kube, namespace, "lonely", run_status(run, _now(), {"faithfulness": value})
            )
        # Events of one object are handled in order: once the second write is exported, the
        # handler of the first one has finished (and a reconcile of it would have been counted).
        eventually(
            lambda: eval_series(scrape(port), namespace).get(faithfulness) == 0.7,
            what="the second write exported",
        )
        assert reconciles() == before


def test_the_eval_subcommand_writes_status_and_the_operator_exports_it(
    kube: Any, namespace: str, metered: tuple[OperatorProcess, int], tmp_path: Path
) -> None:
    """End to end: `sleuth eval tsa --status` (the agent's model scripted: it always searches the
    documents, so 3 of these 4 cases are right) completes a one-part run; /metrics shows it."""
    _, port = metered
    apply(kube, namespace, AGENT)
    apply(kube, namespace, golden_configmap())
    apply(kube, namespace, schedule("bot-nightly"))
    search = {"name": "vector_search", "arguments": {"query": [{"$any": True}]}}
    cases = [
        {"id": "policy", "query": "What does the returns policy say?", "expected": [search]},
        {"id": "latency", "query": "What latency does Redis offer?", "expected": [search]},
        {"id": "cluster", "query": "How does Redis Cluster shard?", "expected": [search]},
        {"id": "orders", "query": "How many orders in March?", "expected": [{"name": "sql_query"}]},
    ]
    path = tmp_path / "tsa.jsonl"
    path.write_text("".join(json.dumps({**c, "split": "test"}) + "\n" for c in cases))

    def respond(body: dict[str, Any]) -> ScriptedResponse:
        asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return ScriptedResponse(
            tool_calls=[ScriptedToolCall(name="vector_search", arguments={"query": asked})]
        )

    with ScriptedServer(responder=respond) as model:
        sleuth = str(Path(sys.executable).parent / "sleuth")
        done = subprocess.run(
            [
                sleuth, "eval", "tsa", "--cases", str(path), "--endpoint", model.url,
                "--model", "scripted", "--agent-client", "--agent", "bot", "--dataset", "golden",
                "--split", "test", "--final-report", "--no-progress", "--timeout", "20",
                "--threshold", "tool_selection_accuracy=0.7",
                "--status", f"{namespace}/bot-nightly", "--run-id", "job-1",
                "--expect-parts", "1", "--kubeconfig", str(kube.kubeconfig),
            ],
            capture_output=True, text=True, timeout=300, env={**kube.env},
        )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "run Succeeded" in done.stdout
    status = get(kube, namespace, "evalschedule/bot-nightly")["status"]
    assert status["lastRunOutcome"] == "Succeeded"

    base = frozenset({("namespace", namespace), ("agent", "bot"), ("eval_schedule", "bot-nightly")})
    scores = base | {("dataset", "golden"), ("split", "test"), ("source", "eval")}
    finished = _ts(status["lastRunTime"])
    expected = {
        ("agent_tool_selection_accuracy", scores): 0.75,
        ("sleuth_eval_last_run_timestamp_seconds", base): finished,
        ("sleuth_eval_last_success_timestamp_seconds", base): finished,
        ("sleuth_eval_last_run_failed", base): 0.0,
        ("sleuth_eval_last_run_rows", base): 4.0,
        ("sleuth_eval_last_run_failed_rows", base): 0.0,
    }
    eventually(
        lambda: eval_series(scrape(port), namespace) == expected,
        what="the eval subcommand's results on /metrics",
    )
