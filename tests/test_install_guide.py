"""docs/install.md, walked as written: every command of its shell blocks, in order, on a test
control plane of its own — or, for the few that cannot run here, the test that covers them.

The README's cluster block is walked the same way (tests/test_readme.py). As there, kwok runs no
containers: the operator the chart installs is started on the host instead, with exactly the
arguments the chart's Deployment gives it (read back after every ``helm install`` and
``helm upgrade``; only its health and metrics ports move to free ones), so an upgrade that changes
the operator's flags changes what the walk sees. A command whose line ends in ``# <text>`` must
print that text (the guide's ``# yes`` and ``# contracts-weekly-eval-alerts``), retried for a
bounded time where the operator has work to do first.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.core.process import free_port
from tests.support import docwalk
from tests.support.paths import ROOT

GUIDE = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")

# Commands that cannot run on the test control plane, by prefix → the test that covers them.
ELSEWHERE = {
    "helm test ": "tests/e2e/test_contracts_on_a_real_node.py (kwok completes no test pod)",
    "kubectl -n data port-forward svc/qdrant": "tests/tools/test_ingest_cli.py (no Qdrant server "
    "here: ingest is tested against Qdrant's local mode)",
    "sleuth ingest ": "tests/tools/test_ingest_cli.py",
    "REGISTRY_USERNAME=": "tests/cluster/test_push.py::test_make_push_builds_both_images_and_"
    "pushes_them (a local registry; this one names yours)",
    "python3 -m venv /tmp/tv": "tests/test_layout.py::test_the_tools_install_no_scoring_stack",
    "/tmp/tv/bin/pip list": "tests/test_layout.py::test_the_tools_install_no_scoring_stack",
    "tests/cluster/image.sh": "tests/cluster/test_image.py (root, mmdebstrap; the real node)",
    "ctr -n k8s.io images import": "tests/cluster/test_image.py",
    "tests/cluster/image_run.sh": "tests/cluster/test_image.py",
}
# The namespace-scoped install is the alternative to step 1's (one release per cluster here);
# tests/charts/test_chart_cluster.py::test_namespace_scoped_rbac_stays_in_its_namespaces
# installs it and checks the same `kubectl auth can-i` answers.
ALTERNATIVE_BLOCK_MARKS = ("watchNamespaces={team-a,team-b}", "SA=system:serviceaccount:")
OPERATOR = "sleuth-operator"
RELEASE_NAMESPACE = "sleuth-system"


def _skipped_blocks() -> set[int]:
    return {
        index
        for index, block in enumerate(docwalk.blocks(GUIDE))
        if any(mark in block for mark in ALTERNATIVE_BLOCK_MARKS)
    }


def _plan() -> list[tuple[docwalk.Command, str | None]]:
    """Every command of the guide and why it is not run here (None: it runs)."""
    skipped = _skipped_blocks()
    plan: list[tuple[docwalk.Command, str | None]] = []
    for command in docwalk.commands(GUIDE):
        reason = next((w for p, w in ELSEWHERE.items() if command.text.startswith(p)), None)
        if command.block in skipped:
            reason = "the namespace-scoped alternative (tests/charts/test_chart_cluster.py)"
        plan.append((command, reason))
    return plan


@pytest.mark.unit
def test_every_command_of_the_guide_is_walked_or_covered_elsewhere() -> None:
    plan = _plan()
    ran = [c.text for c, reason in plan if reason is None]
    # The path itself runs: install, Secrets, agent and tools, access keys, evals, monitoring,
    # allowlists, CRD upgrade, replicas, uninstall.
    for must in (
        "kubectl create namespace team-a",
        "helm install sleuth charts/sleuth -n sleuth-system --create-namespace --set "
        "'rbac.secretNamespaces={team-a}' --wait",
        "kubectl -n team-a apply -f examples/contracts/30-evalschedule.yaml",
        "kubectl apply --server-side --force-conflicts -f charts/sleuth/crds/",
        "helm uninstall sleuth -n sleuth-system",
    ):
        assert must in ran, must
    # Nothing is covered elsewhere by accident: each prefix still matches a command.
    texts = [c.text for c, _ in plan]
    for prefix in (*ELSEWHERE, *PRINTS):
        assert any(t.startswith(prefix) for t in texts), f"no command starts with {prefix!r}"
    assert len(_skipped_blocks()) == len(ALTERNATIVE_BLOCK_MARKS)


class HostOperator:
    """The chart's operator, run on the host with the arguments of the chart's Deployment."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.args: list[str] = []
        self.proc: subprocess.Popen[bytes] | None = None

    def follow_chart(self) -> None:
        """(Re)start with the Deployment's arguments when they changed; stop when it is gone."""
        out = subprocess.run(
            ["kubectl", "-n", RELEASE_NAMESPACE, "get", "deployment", OPERATOR, "-o", "json"],
            env=self.env,
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            self.stop()
            return
        (container,) = json.loads(out.stdout)["spec"]["template"]["spec"]["containers"]
        args = [a for a in container["args"] if not a.startswith(("--liveness", "--metrics-port"))]
        if args == self.args and self.proc is not None:
            return
        self.stop()
        self.args = args
        ports = [f"--liveness=http://127.0.0.1:{free_port()}/healthz"]
        ports.append(f"--metrics-port={free_port()}")
        env = {**self.env, "POD_NAMESPACE": RELEASE_NAMESPACE, "POD_NAME": "walk-0"}
        with self.log.open("ab") as out_file:
            self.proc = subprocess.Popen(
                [str(docwalk.BIN / "sleuth"), *args, *ports, "--resync-seconds", "5"],
                env=env,
                stdout=out_file,
                stderr=subprocess.STDOUT,
            )

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
            self.proc = None


@pytest.fixture
def cluster() -> Iterator[dict[str, str]]:
    try:
        with docwalk.own_cluster(f"sleuth-guide-{os.getpid()}") as env:
            yield env
    except RuntimeError as err:
        pytest.fail(str(err))


def _run(command: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


# What a command must print, beyond succeeding: the GPU check shows the simulated H100 nodes
# with their product, GPU count and taint (an unquoted `nvidia\.com` would lose its backslash
# to the shell and print <none>).
PRINTS = {
    "kubectl get nodes -o 'custom-columns=": re.compile(
        r"NVIDIA-H100-80GB-HBM3\s+8\s+nvidia\.com/gpu"
    ),
}


def _expected(comment: str) -> str:
    """What a trailing comment says the command prints: its first word (``yes``, ``no``, a
    resource name), or nothing for a comment that explains instead."""
    word = comment.split()[0] if comment else ""
    return word if word in ("yes", "no") or word.startswith("contracts-") else ""


@pytest.mark.cluster
@pytest.mark.slow
def test_the_install_guide_works_as_written(cluster: dict[str, str], tmp_path: Path) -> None:
    env = {**cluster, "HF_TOKEN": "hf-test-token", "TOKEN": "unused"}
    operator = HostOperator(env, tmp_path / "operator.log")
    ran: list[str] = []
    try:
        for command, reason in _plan():
            if reason is not None:
                continue
            expected = _expected(command.comment)
            deadline = time.monotonic() + (180 if expected else 0)
            while True:
                proc = _run(command.text, env, ROOT)
                done = proc.returncode == 0 and expected in proc.stdout
                if done or time.monotonic() > deadline:
                    break
                time.sleep(2)
            assert proc.returncode == 0, (
                f"{command.text}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}\n"
                f"operator: {_tail(operator.log)}"
            )
            assert expected in proc.stdout, f"{command.text}: wanted {expected!r}\n{proc.stdout}"
            for prefix, pattern in PRINTS.items():
                if command.text.startswith(prefix):
                    assert pattern.search(proc.stdout), f"{command.text}\n{proc.stdout}"
            ran.append(command.text)
            print(f"ran: {command.text[:100]}", flush=True)  # the walk, with -s
            if shlex.split(command.text)[:2] in (["helm", "install"], ["helm", "upgrade"]):
                operator.follow_chart()
            if command.text.startswith("helm uninstall"):
                operator.stop()
    finally:
        operator.stop()
    assert _gone(env, "crd/agentdeployments.sleuth.dev"), "the CRDs outlived the last step"
    assert len(ran) >= 25, ran


def _gone(env: dict[str, str], what: str) -> bool:
    out = subprocess.run(["kubectl", "get", what], env=env, capture_output=True, text=True)
    return out.returncode != 0 and "NotFound" in out.stderr


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""
