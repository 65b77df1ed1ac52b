"""`sleuth eval ragas|tsa --status` against the real control plane: the eval subcommands run on
the host as processes (real agent service, scripted model and judge), write their parts to an
EvalSchedule's status, and `kubectl get evalschedule` shows the results.

No operator runs: the CRD serves the status subresource, so the EvalSchedule is made with kubectl.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.golden.manifest import freeze
from sleuth.evals.status import RunContext, StatusTarget, failed_part
from sleuth.evals.statuswriter import StatusWriter, api_client
from sleuth.scoring.samples import RagSample
from sleuth.scripted import ScriptedResponse, ScriptedServer, ScriptedToolCall
from tests.support.paths import CRDS, SLEUTH
from tests.support.polling import eventually

pytestmark = pytest.mark.cluster

SCHEDULE = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "redis-nightly"},
    "spec": {
        "agentRef": {"name": "redis"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}, "name": "golden"},
    },
}
# TSA cases: the scripted model always picks vector_search, so 3 of these 4 are right (0.75)
TSA_CASES = [
    {"id": "policy", "query": "What does the returns policy say?", "split": "test"},
    {"id": "latency", "query": "What latency does Redis offer?", "split": "test"},
    {"id": "cluster", "query": "How does Redis Cluster shard?", "split": "test"},
]
TSA_WRONG = {"id": "orders", "query": "How many orders in March?", "split": "test"}


@pytest.fixture(scope="module")
def crds(kube: Any) -> None:
    kube.kubectl("apply", "--server-side", "-f", str(CRDS))
    kube.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", "crd/evalschedules.sleuth.dev"
    )


@pytest.fixture
def schedule(kube: Any, namespace: str, crds: None) -> str:
    kube.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(SCHEDULE))
    return f"{namespace}/{SCHEDULE['metadata']['name']}"


@pytest.fixture
def tsa_model() -> Iterator[ScriptedServer]:
    """The agent's model for TSA: it searches the documents whatever the question."""

    def respond(body: dict[str, Any]) -> ScriptedResponse:
        asked = next(m["content"] for m in body["messages"] if m["role"] == "user")
        call = ScriptedToolCall(name="vector_search", arguments={"query": asked})
        return ScriptedResponse(tool_calls=[call])

    with ScriptedServer(responder=respond) as server:
        yield server


@pytest.fixture
def datasets(tmp_path: Path, worked_example: RagSample) -> dict[str, Path]:
    # the worked example under three ids: redis-c hashes to shard 0 of 2, redis-a and -b to 1
    golden = [
        GoldenCase(
            id=f"redis-{x}",
            question=worked_example.question,
            reference=worked_example.reference or "",
            stratum="easy",
            split="test",
        )
        for x in "abc"
    ]
    path = tmp_path / "golden.jsonl"
    dump_jsonl(golden, path)
    freeze(golden, path)
    tsa = tmp_path / "tsa.jsonl"
    expected = {"name": "vector_search", "arguments": {"query": [{"$any": True}]}}
    lines = [{**c, "expected": [expected]} for c in TSA_CASES]
    lines.append({**TSA_WRONG, "expected": [{"name": "sql_query", "arguments": {}}]})
    tsa.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return {"golden": path, "tsa": tsa}


def ragas_args(datasets: dict[str, Path], agent: str, judge: ScriptedServer) -> list[str]:
    return [
        "eval",
        "ragas",
        "--golden",
        str(datasets["golden"]),
        "--agent-url",
        agent,
        "--judge-url",
        judge.url,
        "--judge-model",
        "judge",
        "--metrics",
        "faithfulness,context_recall",
        "--threshold",
        "faithfulness=0.7",
        *COMMON,
    ]


def tsa_args(datasets: dict[str, Path], model: ScriptedServer) -> list[str]:
    return [
        "eval",
        "tsa",
        "--cases",
        str(datasets["tsa"]),
        "--endpoint",
        model.url,
        "--model",
        "scripted",
        "--agent-client",
        "--threshold",
        "tool_selection_accuracy=0.7",
        *COMMON,
    ]


COMMON = ["--agent", "redis", "--dataset", "golden", "--split", "test", "--final-report"]
COMMON += ["--no-progress", "--timeout", "20"]


def start(kube: Any, args: list[str], **env: str) -> subprocess.Popen[str]:
    """`sleuth ...` as its own process, KUBECONFIG pointing at the test cluster."""
    return subprocess.Popen(
        [str(SLEUTH), *args],
        env={**kube.env, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def status_of(kube: Any, namespace: str) -> dict[str, Any]:
    name = SCHEDULE["metadata"]["name"]
    obj = json.loads(
        kube.kubectl("get", "evalschedule", name, "-n", namespace, "-o", "json").stdout
    )
    status: dict[str, Any] = obj.get("status", {})
    return status


def test_parts_of_runs_land_in_status(
    kube: Any,
    namespace: str,
    schedule: str,
    agent_url: str,
    judge_server: ScriptedServer,
    tsa_model: ScriptedServer,
    datasets: dict[str, Path],
) -> None:
    run1 = ["--status", schedule, "--run-id", "job-1", "--expect-parts", "3"]
    rg = ragas_args(datasets, agent_url, judge_server)
    # job-1: two ragas shards and the TSA part, all at once
    procs = [
        start(kube, [*rg, *run1, "--shard", "0/2", "--kubeconfig", str(kube.kubeconfig)]),
        start(kube, [*rg, *run1, "--shard", "1/2"]),
        start(kube, [*tsa_args(datasets, tsa_model), *run1]),
    ]
    results = [finish(p) for p in procs]
    for code, out, err in results:
        assert code == 0, f"exit {code}\n{out}\n{err}"
        assert f"of run job-1 written to EvalSchedule {schedule}" in out
    assert sum("; run Succeeded" in out for _, out, _ in results) == 1  # the completing part

    status = status_of(kube, namespace)
    assert status["lastRunId"] == "job-1"
    assert status["lastRunOutcome"] == "Succeeded"
    assert status["lastRunMessage"] == "3 parts, 7 rows and TSA cases, 0 failed"
    assert status["scores"] == {
        "faithfulness": 0.75,
        "contextRecall": 1.0,
        "toolSelectionAccuracy": 0.75,
    }
    assert status["scored"] == {"faithfulness": 3, "contextRecall": 3, "toolSelectionAccuracy": 4}
    assert (status["rows"], status["failedRows"]) == (3 + 4, 0)
    assert (status["dataset"], status["split"]) == ("golden", "test")
    assert status["lastSuccessfulRunTime"] == status["lastRunTime"]
    parts = {p["name"]: p for p in status["currentRun"]["parts"]}
    assert sorted(parts) == ["ragas-0", "ragas-1", "tsa-0"]  # no lost update
    assert (parts["ragas-0"]["rows"], parts["ragas-1"]["rows"]) == (1, 2)
    assert parts["ragas-1"]["shard"] == "1/2"
    assert parts["tsa-0"]["scored"] == {"toolSelectionAccuracy": 4}

    table = kube.kubectl("get", "evalschedule", "-n", namespace).stdout.splitlines()
    header, row = table[0].split(), table[1].split()
    assert header[:6] == ["NAME", "SCHEDULE", "LAST", "RUN", "FAITHFULNESS", "TSA"]
    assert row[0] == "redis-nightly"
    assert row[7:9] == ["0.75", "0.75"]  # after the 5 schedule fields and the Last Run age
    assert row[6].endswith("s") or row[6].endswith("m")  # an age, e.g. 3s

    # job-2: a new run id replaces currentRun; job-1's results stay until job-2 completes
    run2 = ["--run-id", "job-2", "--expect-parts", "2"]
    code, out, err = finish(
        start(kube, [*tsa_args(datasets, tsa_model), *run2], SLEUTH_EVAL_STATUS=schedule)
    )
    assert code == 0, err
    status = status_of(kube, namespace)
    assert status["currentRun"]["id"] == "job-2"
    assert [p["name"] for p in status["currentRun"]["parts"]] == ["tsa-0"]
    assert status["lastRunId"] == "job-1"

    # job-2's ragas part cannot reach the agent: the run fails, job-1's scores stay
    unreachable = ragas_args(datasets, "http://127.0.0.1:9", judge_server)
    code, out, err = finish(start(kube, [*unreachable, "--status", schedule, *run2]))
    assert code == 1, err  # the eval's own exit code: every row failed the gate
    assert "part ragas-0 (Failed) of run job-2" in out
    after = status_of(kube, namespace)
    assert after["lastRunId"] == "job-2"
    assert after["lastRunOutcome"] == "Failed"
    assert "ragas-0: no row could be scored (3 attempted)" in after["lastRunMessage"]
    for key in ("scores", "scored", "rows", "lastSuccessfulRunTime", "datasetSha256"):
        assert after[key] == status[key], key
    assert after["lastRunTime"] >= status["lastSuccessfulRunTime"]


def test_a_scheduled_part_that_misses_a_threshold_exits_0_and_reports_it(
    kube: Any, namespace: str, schedule: str, datasets: dict[str, Path], tsa_model: ScriptedServer
) -> None:
    """The Job must not fail (and retry the whole run) because a score is low: the scores go to
    the status, and the EvalSchedule's alerts judge them. Without --status it is still a gate."""
    strict = [a if a != "tool_selection_accuracy=0.7" else "tool_selection_accuracy=1"
              for a in tsa_args(datasets, tsa_model)]  # fmt: skip
    code, out, err = finish(start(kube, strict))
    assert code == 1, err  # a CI gate: the threshold is missed
    run = ["--status", schedule, "--run-id", "job-low", "--expect-parts", "1"]
    code, out, err = finish(start(kube, [*strict, *run]))
    assert code == 0, f"{out}\n{err}"
    assert "thresholds missed; reported through the EvalSchedule" in out
    status = status_of(kube, namespace)
    assert (status["lastRunId"], status["lastRunOutcome"]) == ("job-low", "Succeeded")
    assert status["scores"]["toolSelectionAccuracy"] == 0.75


def test_an_eval_that_stops_on_an_error_still_reports(
    kube: Any, namespace: str, schedule: str, tmp_path: Path, tsa_model: ScriptedServer
) -> None:
    broken = tmp_path / "cases.jsonl"
    broken.write_text('{"id": "x", "split": "test"}\n', encoding="utf-8")
    args = ["eval", "tsa", "--cases", str(broken), "--endpoint", tsa_model.url, *COMMON]
    code, _out, err = finish(start(kube, [*args, "--status", schedule, "--run-id", "job-9"]))
    assert code == 2
    assert "cases.jsonl:1" in err
    status = status_of(kube, namespace)
    assert status["lastRunOutcome"] == "Failed"
    (part,) = status["currentRun"]["parts"]
    assert (part["name"], part["outcome"]) == ("tsa-0", "Failed")
    assert part["message"].startswith(f"{broken}:1: field")
    assert "scores" not in status


def test_a_missing_schedule_fails_before_the_eval_runs(
    kube: Any, namespace: str, crds: None, tsa_model: ScriptedServer, datasets: dict[str, Path]
) -> None:
    args = [*tsa_args(datasets, tsa_model), "--status", f"{namespace}/nope", "--run-id", "j"]
    code, _out, err = finish(start(kube, args))
    assert code == 3
    assert f"EvalSchedule {namespace}/nope" in err
    assert "HTTP 404" in err
    assert tsa_model.requests() == []  # nothing was asked


def service_account_kubeconfig(kube: Any, namespace: str, account: str, path: Path) -> Path:
    kube.kubectl("create", "serviceaccount", account, "-n", namespace)
    token = kube.kubectl("create", "token", account, "-n", namespace).stdout.strip()
    admin = json.loads(kube.kubectl("config", "view", "--raw", "--minify", "-o", "json").stdout)
    cluster = admin["clusters"][0]["cluster"]
    if "certificate-authority" in cluster:
        ca = Path(cluster.pop("certificate-authority")).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def grant(kube: Any, namespace: str, account: str, verbs: str) -> None:
    """Grant ``verbs`` on the schedule's status, and wait until the authorizer applies it (it
    reads Roles and RoleBindings from a cache, a moment behind the writes)."""
    name = SCHEDULE["metadata"]["name"]
    role = f"{account}-role"
    kube.kubectl(
        "create", "role", role, "-n", namespace, f"--verb={verbs}",
        "--resource=evalschedules.sleuth.dev/status", f"--resource-name={name}",
    )  # fmt: skip
    kube.kubectl(
        "create", "rolebinding", role, "-n", namespace, f"--role={role}",
        f"--serviceaccount={namespace}:{account}",
    )  # fmt: skip
    who = f"--as=system:serviceaccount:{namespace}:{account}"
    for verb in verbs.split(","):
        eventually(
            lambda verb=verb: kube.kubectl(
                "auth", "can-i", verb, f"evalschedules.sleuth.dev/{name}",
                "--subresource=status", who, "-n", namespace, check=False,
            ).stdout.strip()
            == "yes",
            60,
            f"{account} may {verb} the schedule's status",
        )  # fmt: skip


def test_the_contract_role_suffices_and_a_refused_write_is_an_error(
    kube: Any,
    namespace: str,
    schedule: str,
    tsa_model: ScriptedServer,
    datasets: dict[str, Path],
    tmp_path: Path,
) -> None:
    run = ["--status", schedule, "--run-id", "job-3", "--expect-parts", "1"]
    # get only: the eval runs (exit 0 on its own), the write is refused → exit 3, named
    reader = service_account_kubeconfig(kube, namespace, "reader", tmp_path / "reader.yaml")
    grant(kube, namespace, "reader", "get")
    args = [*tsa_args(datasets, tsa_model), *run, "--kubeconfig", str(reader)]
    code, _out, err = finish(start(kube, args))
    assert code == 3, err
    assert f"part tsa-0 of run job-3 was not written to EvalSchedule {schedule}" in err
    assert "HTTP 403" in err
    assert "lastRunId" not in status_of(kube, namespace)
    # get + patch on evalschedules/status of this one schedule (the CronJob's Role): it lands
    writer = service_account_kubeconfig(kube, namespace, "eval", tmp_path / "eval.yaml")
    grant(kube, namespace, "eval", "get,patch")
    args = [*tsa_args(datasets, tsa_model), *run, "--kubeconfig", str(writer)]
    code, _out, err = finish(start(kube, args))
    assert code == 0, err
    assert status_of(kube, namespace)["scores"] == {"toolSelectionAccuracy": 0.75}


def test_many_concurrent_writers_lose_no_part(
    kube: Any, namespace: str, schedule: str, tmp_path: Path
) -> None:
    """Eight writers at once against one object: every 409 is redone, every part lands."""
    target = StatusTarget.parse(schedule)
    run = RunContext("job-4", 8)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def write(index: int) -> None:
        writer = StatusWriter(api_client(str(kube.kubeconfig)), target)
        part = failed_part(
            "ragas", f"{index}/8", f"shard {index}", finished_at="2026-01-01T00:00:00Z"
        )
        barrier.wait()
        try:
            writer.write_part(part, run)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    status = status_of(kube, namespace)
    assert sorted(p["name"] for p in status["currentRun"]["parts"]) == [
        f"ragas-{i}" for i in range(8)
    ]
    assert status["lastRunId"] == "job-4"
    assert status["lastRunMessage"].startswith("8 of 8 parts failed: ragas-0: shard 0;")
