"""Helpers of the EvalSchedule metrics tests: an agent and a schedule, status patches, the
operator serving /metrics."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import free_port
from tests.operator.operator_testkit import OperatorProcess
from tests.support.metrics import Samples

AGENT = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "AgentDeployment",
    "metadata": {"name": "bot"},
    "spec": {"model": {"endpoint": "http://vllm.models.svc:8000/v1", "servedModelName": "llama"}},
}


def schedule(name: str, alerts: dict[str, str] | None = None) -> dict[str, Any]:
    """An EvalSchedule of agent ``bot`` (nightly; alert windows from ``alerts``)."""
    spec: dict[str, Any] = {
        "agentRef": {"name": "bot"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    }
    if alerts:
        spec["alerts"] = alerts
    return {
        "apiVersion": "sleuth.dev/v1alpha1",
        "kind": "EvalSchedule",
        "metadata": {"name": name},
        "spec": spec,
    }


def run_status(run: str, finished: str, scores: dict[str, float] | None = None) -> dict[str, Any]:
    """What the eval pods write when a one-part run completes (the status model's shape): a
    success with ``scores``, or without scores a failed run (which leaves the last success's)."""
    outcome = "Succeeded" if scores is not None else "Failed"
    part: dict[str, Any] = {
        "name": "ragas-0",
        "kind": "ragas",
        "shard": "0/1",
        "finishedAt": finished,
        "outcome": outcome,
        "rows": 40,
        "failedRows": 40 if outcome == "Failed" else 1,
    }
    status: dict[str, Any] = {
        "currentRun": {"id": run, "expectedParts": 1, "parts": [part]},
        "lastRunId": run,
        "lastRunTime": finished,
        "lastRunOutcome": outcome,
    }
    if scores is None:
        status["lastRunMessage"] = "ragas-0: no row could be scored"
        return status
    part["scores"] = scores
    status.update(
        lastSuccessfulRunTime=finished,
        scores=scores,
        scored={k: 39 for k in scores},
        rows=40,
        failedRows=1,
        dataset="golden",
        split="test",
        datasetSha256="0" * 64,
    )
    return status


def apply(kube: Any, namespace: str, doc: dict[str, Any]) -> None:
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(doc))


def patch_status(kube: Any, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Merge ``status`` into the EvalSchedule's status subresource, as the eval pods do."""
    kube.kubectl(
        "patch", "evalschedule", name, "-n", namespace, "--subresource=status",
        "--type=merge", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def get(kube: Any, namespace: str, what: str) -> dict[str, Any]:
    """The object, or an empty (falsy) dict while it does not exist."""
    out = kube.kubectl("get", what, "-n", namespace, "-o", "json", check=False)
    return dict(json.loads(out.stdout)) if out.returncode == 0 else {}


EVAL_SERIES = (
    "rag_",
    "agent_tool_selection_accuracy",
    "sleuth_eval_last_",
)


def eval_series(samples: Samples, namespace: str) -> Samples:
    """The EvalSchedule result series of ``namespace``."""
    return {
        (name, labels): value
        for (name, labels), value in samples.items()
        if name.startswith(EVAL_SERIES) and ("namespace", namespace) in labels
    }


@contextmanager
def metered_operator(
    kube: Any, namespace: str, log: Path, *args: str
) -> Iterator[tuple[OperatorProcess, int]]:
    """The operator on the host, watching ``namespace``, serving /metrics on a free port; its log
    is printed when the block raises."""
    kube.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/evalschedules.sleuth.dev"
    )
    port = free_port()
    proc = OperatorProcess(kube.kubeconfig, namespace, log, "--metrics-port", str(port), *args)
    proc.start()
    try:
        yield proc, port
    except BaseException:
        print(f"--- operator log ---\n{proc.text()[-8000:]}")
        raise
    finally:
        proc.stop()
