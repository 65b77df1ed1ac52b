"""First request to first answer when the model server sleeps at zero replicas.

    .venv/bin/python bench/wake_from_zero.py [--cold-start 5] [--rounds 3]

``sleuth agent`` runs as a child process whose model endpoint has nothing behind it (a model
server scaled to zero: the connection is refused, as behind a Service with no endpoint). Two
ways of meeting it, side by side:

- **router**: ``wakeWaitSeconds: 0``; the deterministic router answers at once and says so.
- **model**: ``wakeWaitSeconds: 60``; the scripted model server is started ``--cold-start``
  seconds after the request (the time KEDA takes to see the wake signal, plus a pod's start and
  weight loading, which for a real 70B checkpoint is minutes, not seconds), and the request
  waits for it.

Reported per round: the time from the request to its answer, and for the model the part that is
the agent's own, from the moment the model server answers its health check to the answer (the
wait's polling, every :data:`sleuth.agent.wake.POLL_SECONDS`, plus the model call). The model
answer also holds the scripted server's own start (a Python process). No GPU, no KEDA here: what
a cold start of a real model server costs is in docs/install.md, "Autoscaling and scale to zero".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from sleuth.core.process import free_port, stop_process, wait_healthy
from sleuth.scripted import Scenario, ScriptedProcess, ScriptedResponse

ANSWER = "the model's answer"


def agent(model_port: int, wait_s: int, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    config = {
        "model": {
            "endpoint": f"http://127.0.0.1:{model_port}/v1",
            "servedModelName": "scripted",
            "wakeWaitSeconds": wait_s,
        },
        "requestTimeoutSeconds": 90,
        "onlineEval": {"sampleRate": 0},
    }
    path = workdir / f"agent-{wait_s}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    env = {**os.environ, "SLEUTH_AGENT_NAME": "wake", "SLEUTH_AGENT_HOST": "127.0.0.1"}
    cmd = [sys.executable, "-c", "from sleuth.core.cli import main; raise SystemExit(main())"]
    cmd += ["agent", "--config", str(path), "--port", str(port)]
    log = (workdir / f"agent-{wait_s}.log").open("wb")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(f"{url}/healthz", proc, timeout=120, name="agent")
    return proc, url


def ask(url: str) -> tuple[float, float, str]:
    """(started, ended) on the perf_counter clock, and the answer."""
    started = time.perf_counter()
    response = httpx.post(f"{url}/v1/query", json={"question": "what changed?"}, timeout=120)
    response.raise_for_status()  # never a 5xx: a failure here is a finding
    return started, time.perf_counter(), str(response.json()["answer"])


def router_round(workdir: Path) -> float:
    proc, url = agent(free_port(), 0, workdir)
    try:
        started, ended, answer = ask(url)
        assert "deterministic router" in answer, answer
        return (ended - started) * 1000
    finally:
        stop_process(proc)


def model_round(workdir: Path, cold_start_s: float) -> tuple[float, float]:
    """(request to answer ms, model server ready to answer ms)."""
    model_port = free_port()
    proc, url = agent(model_port, 60, workdir)
    scenario = Scenario(fallback=ScriptedResponse(content=ANSWER))
    server = ScriptedProcess(scenario, model_port)
    ready: list[float] = []

    def wake() -> None:
        server.start()
        ready.append(time.perf_counter())

    waker = threading.Timer(cold_start_s, wake)
    try:
        waker.start()
        started, ended, answer = ask(url)
        assert answer == ANSWER, answer
        return (ended - started) * 1000, (ended - ready[0]) * 1000
    finally:
        waker.cancel()
        server.stop()
        stop_process(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cold-start", type=float, default=5.0, help="seconds (default 5)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        print("round  router answer ms  model answer ms  model server ready -> answer ms")
        for i in range(args.rounds):
            router = router_round(workdir)
            model, own = model_round(workdir, args.cold_start)
            print(f"{i + 1:>5}  {router:>16.0f}  {model:>15.0f}  {own:>31.0f}")


if __name__ == "__main__":
    main()
