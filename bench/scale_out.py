"""Replicas over time under a load ramp: the model server from 0 to N and back to 0 with KEDA.

    .venv/bin/python bench/scale_out.py [--ramp 1,4,8,4,1] [--step-seconds 20] [--request-ms 1400]
                                        [--kubeconfig FILE]

The scaling chain of tests/operator/test_cluster_keda.py, measured over a ramp: a test control
plane (tests/cluster/up.sh, or ``--kubeconfig``), KEDA's operator and metrics apiserver on the host
(tests/operator/keda_kit.py: ``make keda`` first), the operator, a real ``sleuth agent`` and a real
Prometheus; the autoscaled example with ``minReplicas 0``, ``maxReplicas 3``,
``targetWaitingRequests 2`` and a 20 s cooldown. The model server's pods are simulated (kwok); the
scripted server (``--max-num-seqs 1``, each answer ``--request-ms`` long) stands in for them: it is
started when the Deployment first has a replica and stopped when it is back at zero.

The ramp offers ``c`` concurrent clients for ``--step-seconds`` per step (each client asks, waits
for its answer, asks again: count- and time-bounded). Printed: one line per 5 s (offered clients,
Deployment replicas, ``vllm:num_requests_waiting`` as Prometheus last saw it, answers and failures
so far), then the times of 0 → 1, of the first answer, of the peak, of N → 1 and of 1 → 0, the
replica-seconds held against a fixed ``maxReplicas`` over the same time (what a GPU server's
GPU-hours scale with), and the failed requests (any non-200 is a failure; the router's answers are
counted apart).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test kits: tests/operator/keda_kit.py

from sleuth.core.names import VLLM_REQUESTS_WAITING  # noqa: E402
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse  # noqa: E402
from tests.operator.keda_kit import autoscaled_contracts, running_keda  # noqa: E402

ANSWER = "the model's answer"
BIN = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth")) / "bin" / "current"


@dataclass
class Kube:
    """kubectl against one cluster (the interface the test kits use)."""

    kubeconfig: Path

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        done = subprocess.run(
            [str(BIN / "kubectl"), *args],
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and done.returncode:
            raise SystemExit(f"kubectl {' '.join(args)}: {done.stderr}")
        return done


@dataclass
class Record:
    """What the ramp saw: one sample a second, and every answer."""

    t0: float = field(default_factory=time.monotonic)
    samples: list[tuple[float, int, int, float | None]] = field(default_factory=list)
    answers: list[tuple[float, int, bool]] = field(default_factory=list)  # t, status, router
    offered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return time.monotonic() - self.t0


def replicas(kube: Kube, namespace: str) -> int:
    """The model Deployment's replicas; -1 before the operator has made it."""
    got = kube.kubectl(
        "get", "deployment/contracts-model", "-n", namespace, "-o", "json", check=False
    )
    if got.returncode:
        return -1
    return int(json.loads(got.stdout)["spec"].get("replicas", 1))


def waiting(prometheus: str, namespace: str) -> float | None:
    query = f'sum({VLLM_REQUESTS_WAITING}{{namespace="{namespace}"}})'
    try:
        got = httpx.get(f"{prometheus}/api/v1/query", params={"query": query}, timeout=5).json()
    except httpx.HTTPError:
        return None
    result = got["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def client(url: str, record: Record, until: float, slot: int) -> None:
    while time.monotonic() < until and slot < record.offered:
        try:
            response = httpx.post(f"{url}/v1/query", json={"question": "q?"}, timeout=120)
            router = response.status_code == 200 and response.json()["answer"] != ANSWER
            status = response.status_code
        except httpx.HTTPError:
            status, router = 0, False
        with record.lock:
            record.answers.append((record.now(), status, router))


def watch(
    kube: Kube, namespace: str, model: ScriptedProcess, prometheus: str, record: Record, stop: Any
) -> None:
    """Sample once a second; start the stand-in when the Deployment first has a replica and
    stop it when it is back at zero (what KEDA's pods would do)."""
    running = False
    while not stop.is_set():
        count = replicas(kube, namespace)
        if count >= 1 and not running:
            model.start()
            running = True
        elif count == 0 and running:
            model.stop()
            running = False
        record.samples.append((record.now(), record.offered, count, waiting(prometheus, namespace)))
        stop.wait(1)
    if running:
        model.stop()


def first(samples: list[tuple[float, int, int, float | None]], test: Any) -> float | None:
    return next((t for t, _, r, _ in samples if test(r)), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ramp", default="1,4,8,4,1", help="clients per step (default 1,4,8,4,1)")
    parser.add_argument("--step-seconds", type=float, default=20.0)
    parser.add_argument("--request-ms", type=int, default=1400, help="each answer's length")
    parser.add_argument("--kubeconfig", type=Path, help="an existing test cluster (up.sh)")
    args = parser.parse_args()
    ramp = [int(c) for c in args.ramp.split(",")]
    name = f"bench-scale-{os.getpid()}"
    cluster_env = {**os.environ, "SLEUTH_CLUSTER": name}
    if args.kubeconfig is None:
        up = subprocess.run(
            [str(ROOT / "tests" / "cluster" / "up.sh")], env=cluster_env, capture_output=True,
            text=True,
        )  # fmt: skip
        if up.returncode:
            raise SystemExit(f"tests/cluster/up.sh failed:\n{up.stderr[-3000:]}")
        kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    else:
        kubeconfig = args.kubeconfig
    kube = Kube(kubeconfig)
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    try:
        kube.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "crds"))
        kube.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
        kube.kubectl("create", "namespace", namespace)
        with tempfile.TemporaryDirectory() as tmp:
            run(kube, namespace, Path(tmp), ramp, args)
    finally:
        kube.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
        if args.kubeconfig is None:
            subprocess.run([str(ROOT / "tests" / "cluster" / "down.sh")], env=cluster_env,
                           capture_output=True)  # fmt: skip


def run(kube: Kube, namespace: str, workdir: Path, ramp: list[int], args: Any) -> None:
    autoscaling = {"minReplicas": 0, "maxReplicas": 3, "targetWaitingRequests": 2,
                   "cooldownSeconds": 20, "wakeWaitSeconds": 50}  # fmt: skip
    scenario = Scenario(fallback=ScriptedResponse(content=ANSWER, delay_ms=args.request_ms))
    with (
        running_keda(kube, workdir, namespace),
        autoscaled_contracts(kube, namespace, workdir, autoscaling) as running,
    ):
        deadline = time.monotonic() + 180
        while replicas(kube, namespace) != 0:  # asleep before the ramp
            if time.monotonic() > deadline:
                raise SystemExit("the model server never went to sleep")
            time.sleep(1)
        model = ScriptedProcess(scenario, running.model_port, "--max-num-seqs", "1")
        record = Record()
        stop = threading.Event()
        watcher = threading.Thread(
            target=watch, args=(kube, namespace, model, running.prometheus, record, stop)
        )
        watcher.start()
        try:
            for clients in ramp:
                until = time.monotonic() + args.step_seconds
                record.offered = clients
                threads = [
                    threading.Thread(target=client, args=(running.agent.url, record, until, slot))
                    for slot in range(clients)
                ]
                for thread in threads:
                    thread.start()
                time.sleep(max(0.0, until - time.monotonic()))
                # a client ends after its current answer (bounded by the request's timeout)
            record.offered = 0
            deadline = time.monotonic() + 300
            while not (record.samples and record.samples[-1][2] == 0):
                if time.monotonic() > deadline:
                    break
                time.sleep(1)
        finally:
            stop.set()
            watcher.join(30)
    report(record)


def report(record: Record) -> None:
    print("   t s  clients  replicas  waiting  answered  failed  router")
    for t, clients, count, queue in record.samples:
        if int(t) % 5 == 0:
            done = [a for a in record.answers if a[0] <= t]
            failed = sum(1 for a in done if a[1] != 200)
            router = sum(1 for a in done if a[2])
            shown = "-" if queue is None else f"{queue:.0f}"
            print(f"{t:>6.0f}  {clients:>7}  {count:>8}  {shown:>7}  {len(done):>8}  {failed:>6}"
                  f"  {router:>6}")  # fmt: skip
    samples = record.samples
    woke = first(samples, lambda r: r >= 1)
    peak = max((r for _, _, r, _ in samples), default=0)
    at_peak = first(samples, lambda r: r == peak)
    back_to_one = next(
        (t for t, _, r, _ in samples if at_peak is not None and t > at_peak and r == 1), None
    )
    asleep = next((t for t, _, r, _ in samples if woke is not None and t > woke and r == 0), None)
    ok = [a for a in record.answers if a[1] == 200 and not a[2]]

    def at(t: float | None) -> str:
        return "never" if t is None else f"{t:.1f} s"

    print(f"0 -> 1 at {at(woke)}; first model answer at {at(ok[0][0] if ok else None)}")
    print(f"peak {peak} replicas at {at(at_peak)}; back to 1 at {at(back_to_one)}; ", end="")
    print(f"to 0 at {at(asleep)}")
    held = sum(max(0, a[2]) * (b[0] - a[0]) for a, b in itertools.pairwise(samples))
    span = samples[-1][0] - samples[0][0] if samples else 0.0
    print(f"replica-seconds held: {held:.0f} of {3 * span:.0f} at a fixed maxReplicas (3)")
    failed = sum(1 for a in record.answers if a[1] != 200)
    router = sum(1 for a in record.answers if a[2])
    print(f"requests: {len(record.answers)} answered, {failed} failed, {router} by the router")


if __name__ == "__main__":
    main()
