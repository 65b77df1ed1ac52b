"""The operator at scale, side by side with a bare client applying the same children.

    .venv/bin/python bench/operator_scale.py --agents 100 [--h100 250] [--cpu auto]
    .venv/bin/python bench/operator_scale.py --agents 2 --kubeconfig K --audit-log L  # your cluster

Starts the test control plane (tests/cluster/up.sh: kwok-simulated H100 and CPU nodes, the Service
range widened to a /16, an audit policy that logs the write requests of the benchmark's two
ServiceAccounts), then, in one run:

1. **Bare client.** The children the operator's own renderers make of N AgentDeployments with
   three ToolBindings each, server-side applied by a plain client (``--bare-workers`` threads,
   sleuth.core.kube) into namespace ``scale-bare``; time until every apply returned, and until
   every Deployment is ready by the operator's own definition. The namespace is then deleted (its
   pods would hold the simulated GPUs).
2. **Operator.** ``sleuth operator --namespace scale-op`` as a process, with a ServiceAccount's
   token; the same N AgentDeployments and 3N ToolBindings applied; time until all of them are
   ``Ready=True`` at their generation. The ratio operator / bare is the headline (target ≤ 1.25).
3. **Converged.** Write requests the apiserver received from the operator during a quiet window
   (target 0 per minute), the operator's CPU seconds and peak RSS (/proc); then its next resync
   pass (``--resync-pass-timeout``, 0: skip): CPU and wall seconds of reconciling every object
   once with nothing to change, and the writes it made (target 0). The converged idle cost at the
   shipped resync period is the quiet rate plus one pass per period.
4. **Restart.** SIGTERM (time to exit), a new operator process, its writes in the first minutes.
5. SIGTERM again (time to exit), then the cluster is stopped (unless ``--keep-cluster``).

Writes are counted from the apiserver's audit log (what it received, by user), never from the
operator's own view. Every wait is bounded by its own cap and by ``--budget-seconds``; a phase
that runs out is reported as such and the run exits 1. Prints a table and writes
``bench/results/operator_scale-<N>.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scale_kit import (
    ROOT,
    AuditLog,
    Cluster,
    Write,
    agent_objects,
    breakdown,
    cpu_seconds,
    peak_rss_mib,
    rendered_children,
    resync_pass,
)

from sleuth.core.errors import KubeRetryable
from sleuth.core.kube import AGENT_DEPLOYMENT, DEPLOYMENT, TOOL_BINDING, Kube, new_api_client
from sleuth.operator.loop.rollout import rollout
from sleuth.operator.render.meta import RenderSettings

BARE_NS, OPERATOR_NS = "scale-bare", "scale-op"
SLEUTH = Path(sys.executable).parent / "sleuth"


class Budget:
    """The run's deadline; each wait takes at most its cap and what is left."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def cap(self, seconds: float) -> float:
        return max(0.0, min(seconds, self.end - time.monotonic()))


def note(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def wait_until(check: Callable[[], bool], timeout: float, interval: float) -> float | None:
    """Seconds until ``check()`` held, None when it did not within ``timeout``."""
    started = time.monotonic()
    while True:
        if check():
            return time.monotonic() - started
        if time.monotonic() - started >= timeout:
            return None
        time.sleep(interval)


def poll_interval(agents: int) -> float:
    """Listing every object costs the apiserver and this process (at N = 1,000 a list of 5,000
    Deployments every 5 s took half a core of this machine's two, and slowed the control plane
    being measured): less often at scale — 1 s at 25 agents, 9 s at 300, 30 s at 1,000, which
    bounds the error of each measured time by the same interval on both sides."""
    return max(1.0, min(30.0, agents / 33))


def apply_all(kube: Kube, manifests: list[dict[str, Any]], workers: int) -> int:
    """Server-side apply every manifest with ``workers`` threads; retryable errors are tried
    again (5 attempts at most). Returns the number that failed for good."""

    def one(manifest: dict[str, Any]) -> bool:
        for attempt in range(5):
            try:
                kube.apply(manifest)
                return True
            except KubeRetryable:
                time.sleep(0.2 * 2**attempt)
        return False

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return sum(not ok for ok in pool.map(one, manifests))


def _ready(obj: dict[str, Any]) -> bool:
    generation = obj["metadata"].get("generation")
    status = obj.get("status") or {}
    if status.get("observedGeneration") != generation:
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


class Operator:
    """``sleuth operator`` watching one namespace, as the ``operator`` ServiceAccount."""

    def __init__(self, kubeconfig: Path, log: Path, extra: list[str]) -> None:
        self.cmd = [
            str(SLEUTH),
            "operator",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            OPERATOR_NS,
            *extra,
        ]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT)
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stats(self) -> tuple[float, float]:
        """CPU seconds and peak RSS (MiB) so far."""
        assert self.proc is not None
        return cpu_seconds(self.proc.pid), peak_rss_mib(self.proc.pid)

    def terminate(self, timeout: float) -> float | None:
        """SIGTERM; seconds until it exited, None when it had to be killed after ``timeout``."""
        if self.proc is None:
            return None
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
            return time.monotonic() - started
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            return None
        finally:
            self.proc = None


def per_minute(writes: list[Write], seconds: float) -> float:
    return len(writes) * 60 / seconds if seconds > 0 else 0.0


def bare_phase(cluster: Cluster, kube: Kube, args: argparse.Namespace, budget: Budget) -> dict:
    cluster.fresh_namespace(BARE_NS)
    children = rendered_children(agent_objects(BARE_NS, args.agents), RenderSettings())
    deployments = [c for c in children if c["kind"] == "Deployment"]
    started, wall = time.monotonic(), time.time()
    failed = apply_all(kube, children, args.bare_workers)
    applied = time.monotonic() - started

    note(f"bare client: {len(children)} children applied in {applied:.1f} s ({failed} failed)")
    shown = [0.0]

    def all_ready() -> bool:
        live = kube.list(DEPLOYMENT, BARE_NS)
        ready = sum(rollout(d["metadata"]["name"], d).ready for d in live)
        if time.monotonic() - shown[0] > 30:
            note(f"bare client: {ready}/{len(deployments)} Deployments ready")
            shown[0] = time.monotonic()
        return ready >= len(deployments)

    waited = wait_until(all_ready, budget.cap(args.ready_timeout), poll_interval(args.agents))
    result = {
        "children": len(children),
        "deployments": len(deployments),
        "failed_applies": failed,
        "apply_s": applied,
        "ready_s": None if waited is None else applied + waited,
        "started_at": wall,
    }
    note(f"bare client: ready after {waited} s of waiting; deleting {BARE_NS}")
    result["deleted_s"] = cluster.delete_namespace(BARE_NS, budget.cap(args.ready_timeout))
    return result


def operator_phase(
    cluster: Cluster, admin: Kube, operator: Operator, args: argparse.Namespace, budget: Budget
) -> dict:
    cluster.fresh_namespace(OPERATOR_NS)
    workload = agent_objects(OPERATOR_NS, args.agents)
    objects = [o for agent, tools in workload for o in (agent, *tools)]
    operator.start()
    time.sleep(args.operator_warmup)  # kopf lists and starts its watches
    started, wall = time.monotonic(), time.time()
    failed = apply_all(admin, objects, args.bare_workers)
    applied = time.monotonic() - started
    note(f"operator: {len(objects)} custom resources applied in {applied:.1f} s")
    progress: dict[str, float] = {}
    shown = [0.0]

    def all_ready() -> bool:
        if not operator.alive():
            raise SystemExit(f"the operator exited; its log: {operator.log}")
        agents = admin.list(AGENT_DEPLOYMENT, OPERATOR_NS)
        tools = admin.list(TOOL_BINDING, OPERATOR_NS)
        ready = sum(map(_ready, agents)) + sum(map(_ready, tools))
        for share in (0.5, 0.9):
            if ready >= share * len(objects) and str(share) not in progress:
                progress[str(share)] = time.monotonic() - started
        if time.monotonic() - shown[0] > 30:
            note(f"operator: {ready}/{len(objects)} Ready")
            shown[0] = time.monotonic()
        return ready >= len(objects)

    waited = wait_until(all_ready, budget.cap(args.ready_timeout), poll_interval(args.agents))
    cpu, rss = operator.stats()
    return {
        "objects": len(objects),
        "failed_applies": failed,
        "apply_s": applied,
        "ready_s": None if waited is None else time.monotonic() - started,
        "half_ready_s": progress.get("0.5"),
        "ninety_ready_s": progress.get("0.9"),
        "cpu_s": cpu,
        "peak_rss_mib": rss,
        "started_at": wall,
        "ready_at": time.time(),
    }


def count(audit: AuditLog | None, who: str, start: float, end: float) -> dict | None:
    if audit is None:
        return None
    time.sleep(1)  # the last responses reach the log
    writes = audit.between(who, start, end)
    return {
        "writes": len(writes),
        "per_minute": per_minute(writes, end - start),
        "breakdown": breakdown(writes),
        "failed": sum(w.code >= 400 for w in writes),
    }


def run(cluster: Cluster, args: argparse.Namespace, budget: Budget) -> dict:
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    result: dict[str, Any] = {
        "agents": args.agents,
        "commit": commit,
        "loadavg_start": os.getloadavg()[0],
    }
    cluster.install_crds()
    configs = cluster.identities()
    audit = AuditLog(cluster.audit_log) if cluster.audit_log else None
    admin = Kube(new_api_client(str(cluster.kubeconfig)), field_manager="sleuth-bench")
    bare = Kube(new_api_client(str(configs["bare"])), field_manager="sleuth-bench-bare")

    result["bare"] = bare_phase(cluster, bare, args, budget)
    end = time.time()
    result["bare"]["writes"] = count(audit, "bare", result["bare"]["started_at"], end)
    note(f"bare client: {json.dumps(result['bare'])}")

    log = cluster.workdir / "operator.log"
    operator = Operator(configs["operator"], log, args.operator_arg or [])
    try:
        phase = operator_phase(cluster, admin, operator, args, budget)
        result["operator"] = phase
        phase["writes"] = count(audit, "operator", phase["started_at"], phase["ready_at"])
        note(f"operator: {json.dumps(phase)}")
        if phase["ready_s"] is None:
            return result

        note("operator: all Ready; quiet window")
        quiet_from = time.time() + args.settle_seconds
        cpu_before = operator.stats()[0]
        time.sleep(budget.cap(args.settle_seconds + args.quiet_seconds))
        quiet_to = time.time()
        cpu_after, rss = operator.stats()
        result["quiet"] = count(audit, "operator", quiet_from, quiet_to) or {}
        result["quiet"] |= {
            "seconds": quiet_to - quiet_from,
            "cpu_s": cpu_after - cpu_before,
            "peak_rss_mib": rss,
        }
        if args.resync_pass_timeout > 0 and operator.proc is not None:
            note("operator: waiting for its next resync pass")
            timeout = budget.cap(args.resync_pass_timeout)
            found = resync_pass(log, operator.proc.pid, timeout)
            if found.get("started_at") and found.get("wall_s") is not None:
                window = (found["started_at"], found["started_at"] + found["wall_s"] + 5)
                found["writes"] = (count(audit, "operator", *window) or {}).get("writes")
            result["resync"] = found
            note(f"operator: resync pass {json.dumps(found)}")
        result["exit_after_sigterm_s"] = operator.terminate(args.term_timeout)

        note(f"operator: exited {result['exit_after_sigterm_s']} s after SIGTERM; restarting")
        restarted = time.time()
        operator.start()
        time.sleep(budget.cap(args.restart_seconds))
        restart_to = time.time()
        cpu, rss = operator.stats()
        agents = admin.list(AGENT_DEPLOYMENT, OPERATOR_NS)
        tools = admin.list(TOOL_BINDING, OPERATOR_NS)
        result["restart"] = count(audit, "operator", restarted, restart_to) or {}
        result["restart"] |= {
            "seconds": restart_to - restarted,
            "cpu_s": cpu,
            "peak_rss_mib": rss,
            "ready_after": sum(map(_ready, agents)) + sum(map(_ready, tools)),
        }
        result["exit_after_second_sigterm_s"] = operator.terminate(args.term_timeout)
    finally:
        operator.terminate(args.term_timeout)
    result["loadavg_end"] = os.getloadavg()[0]
    return result


def _s(value: float | None, unit: str = " s") -> str:
    return "not reached" if value is None else f"{value:.1f}{unit}"


def _per_minute(window: dict[str, Any]) -> str:
    """A counted window's write rate and what it was made of."""
    return (
        f"{window.get('per_minute', float('nan')):.1f} ({window.get('breakdown', 'not counted')})"
    )


def _exit(seconds: float | None, args: argparse.Namespace) -> str:
    return f"> {args.term_timeout:.0f} s (killed)" if seconds is None else f"{seconds:.1f} s"


def table(r: dict[str, Any], args: argparse.Namespace) -> str:
    b, o = r["bare"], r.get("operator", {})
    ratio = o.get("ready_s") / b["ready_s"] if o.get("ready_s") and b["ready_s"] else None
    rows = [
        ("agents × tools", f"{args.agents} × 3 ({args.agents * 4} custom resources)"),
        ("simulated nodes", f"{args.h100} H100 + {args.cpu} CPU"),
        (
            f"bare client: apply {b['children']} children ({args.bare_workers} threads)",
            _s(b["apply_s"]),
        ),
        (f"bare client: until its {b['deployments']} Deployments are ready", _s(b["ready_s"])),
        ("operator: apply → all Ready", _s(o.get("ready_s"))),
        (
            "operator: 50 % / 90 % Ready",
            f"{_s(o.get('half_ready_s'))} / {_s(o.get('ninety_ready_s'))}",
        ),
        (
            "**ratio operator / bare** (target ≤ 1.25)",
            "n/a" if ratio is None else f"**{ratio:.2f}×**",
        ),
    ]
    w = (b.get("writes") or {}, o.get("writes") or {})
    if w[0] or w[1]:
        rows.append(
            (
                "writes: bare / operator until Ready",
                f"{w[0].get('writes')} / {w[1].get('writes')} ({w[1].get('breakdown')})",
            )
        )
    rows.append(("operator CPU until Ready", _s(o.get("cpu_s"))))
    if "quiet" in r:
        q = r["quiet"]
        rows += [
            (
                f"converged: writes/min over {q['seconds']:.0f} s (target 0)",
                _per_minute(q),
            ),
            ("converged: operator CPU s/min", f"{q['cpu_s'] * 60 / max(q['seconds'], 1e-9):.1f}"),
            ("operator peak RSS", f"{q['peak_rss_mib']:.0f} MiB"),
            ("exit after SIGTERM (converged)", _exit(r.get("exit_after_sigterm_s"), args)),
        ]
    if r.get("resync"):
        p, period = r["resync"], args.resync_period
        idle = r["quiet"]["cpu_s"] * 60 / max(r["quiet"]["seconds"], 1e-9)
        rows += [
            (
                f"one resync pass ({p.get('objects')} objects): CPU / wall / writes",
                f"{p['cpu_s']:.1f} s / {_s(p.get('wall_s'))} / {p.get('writes')}",
            ),
            (
                f"converged CPU s/min with a pass every {period:.0f} s",
                f"{idle + p['cpu_s'] * 60 / period:.1f}",
            ),
        ]
    if "restart" in r:
        s = r["restart"]
        rows += [
            (
                f"after restart: writes/min over {s['seconds']:.0f} s",
                _per_minute(s),
            ),
            ("after restart: CPU s, peak RSS", f"{s['cpu_s']:.1f} s, {s['peak_rss_mib']:.0f} MiB"),
            ("after restart: still Ready", f"{s['ready_after']} of {args.agents * 4}"),
            (
                "exit after SIGTERM (after restart)",
                _exit(r.get("exit_after_second_sigterm_s"), args),
            ),
        ]
    rows.append(
        (
            "load average (1 min) start / end",
            f"{r['loadavg_start']:.1f} / {r.get('loadavg_end', float('nan')):.1f}",
        )
    )
    lines = ["| what | figure |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=25, help="AgentDeployments (3 tools each)")
    parser.add_argument("--h100", type=int, default=250, help="simulated 8×H100 nodes")
    parser.add_argument("--cpu", type=int, default=0, help="simulated CPU nodes (0: enough)")
    parser.add_argument("--kubeconfig", help="use this running cluster instead of starting one")
    parser.add_argument("--audit-log", help="its audit log, written with scale_kit.AUDIT_POLICY")
    parser.add_argument("--bin-dir", help="kubectl's folder (default ~/.cache/sleuth/bin/current)")
    parser.add_argument("--bare-workers", type=int, default=4, help="threads applying (both sides)")
    parser.add_argument("--ready-timeout", type=float, default=1200, help="cap per wait (s)")
    parser.add_argument("--operator-warmup", type=float, default=5, help="start → first apply (s)")
    parser.add_argument("--settle-seconds", type=float, default=10, help="Ready → quiet window")
    parser.add_argument("--quiet-seconds", type=float, default=120, help="converged window (s)")
    parser.add_argument(
        "--resync-pass-timeout",
        type=float,
        default=360,
        help="after the quiet window, wait this long for a resync pass to measure (0: skip)",
    )
    parser.add_argument(
        "--resync-period",
        type=float,
        default=300,
        help="the operator's --resync-seconds (its default unless --operator-arg says otherwise)",
    )
    parser.add_argument("--restart-seconds", type=float, default=120, help="after restart (s)")
    parser.add_argument("--term-timeout", type=float, default=180, help="SIGTERM → SIGKILL (s)")
    parser.add_argument("--budget-seconds", type=float, default=3600, help="the whole run (s)")
    parser.add_argument(
        "--operator-arg", action="append", help="extra argument for sleuth operator (repeatable)"
    )
    parser.add_argument("--keep-cluster", action="store_true")
    parser.add_argument("--out", help="JSON results (default bench/results/operator_scale-N.json)")
    args = parser.parse_args()
    # Per agent: a model pod (1 GPU), an agent pod and three tool pods; 80 per CPU node (of 110).
    args.cpu = args.cpu or max(2, math.ceil(args.agents * 4 / 80))
    if args.h100 * 8 < args.agents:
        parser.error(f"--h100 {args.h100}: {args.h100 * 8} GPUs for {args.agents} model pods")
    budget = Budget(args.budget_seconds)
    workdir = Path(tempfile.mkdtemp(prefix="operator-scale-"))
    if args.kubeconfig:
        cache = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
        audit = Path(args.audit_log) if args.audit_log else None
        bin_dir = Path(args.bin_dir) if args.bin_dir else cache / "bin" / "current"
        cluster = Cluster(Path(args.kubeconfig), bin_dir, audit, workdir=workdir)
    else:
        name = f"sleuth-scale-{os.getpid()}"
        note(f"starting cluster {name} ({args.h100} H100 + {args.cpu} CPU nodes)")
        cluster = Cluster.start(name, args.h100, args.cpu, workdir, budget.cap(900))
    try:
        result = run(cluster, args, budget)
    finally:
        if not args.keep_cluster:
            cluster.stop()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\nOperator at scale ({when}, sleuth {result['commit']}; logs in {workdir})\n")
    print(table(result, args))
    out = Path(args.out or ROOT / "bench" / "results" / f"operator_scale-{args.agents}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    complete = "restart" in result and result["operator"]["ready_s"] is not None
    return 0 if complete else 1


if __name__ == "__main__":
    raise SystemExit(main())
