"""What the chart's cluster tests share: installing a release, reading objects, and
running the real operator on this host with a ServiceAccount's token (kwok runs no pods)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from sleuth.core.process import stop_process
from tests.charts.chart_testkit import CHART
from tests.support.paths import SLEUTH

EVAL_SCHEDULE = {
    "apiVersion": "sleuth.dev/v1alpha1",
    "kind": "EvalSchedule",
    "metadata": {"name": "contracts-nightly"},
    "spec": {
        "agentRef": {"name": "contracts"},
        "schedule": "0 3 * * *",
        "dataset": {"configMapRef": {"name": "golden", "key": "golden.jsonl"}},
    },
}


def install(
    kube: Any, release: str, namespace: str, *sets: str, verb: str = "install", reuse: bool = False
) -> str:
    args = [verb, release, str(CHART), "-n", namespace, "--wait", "--timeout", "120s"]
    args += ["--reuse-values"] if reuse else []
    for s in sets:
        args += ["--set", s]
    return str(kube.helm(*args).stdout)


def get(kube: Any, *args: str) -> Any:
    return json.loads(kube.kubectl("get", *args, "-o", "json").stdout)


def token_kubeconfig(kube: Any, namespace: str, sa: str, path: Path) -> Path:
    token = kube.kubectl("create", "token", sa, "-n", namespace, "--duration=30m").stdout.strip()
    admin = yaml.safe_load(Path(kube.kubeconfig).read_text())
    cluster = admin["clusters"][0]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": cluster["name"], "user": sa}}],
        "current-context": sa,
    }
    path.write_text(yaml.safe_dump(config))
    return path


@contextmanager
def operator_as(
    kube: Any, release_namespace: str, sa: str, watch: list[str], tmp_path: Path
) -> Iterator[Path]:
    """`sleuth operator` authenticated as the ServiceAccount ``sa`` (resync 5 s), watching
    ``watch`` (every namespace when empty); yields its log file and stops it on exit."""
    kubeconfig = token_kubeconfig(kube, release_namespace, sa, tmp_path / "sa.kubeconfig")
    log = tmp_path / "operator.log"
    args = [str(SLEUTH), "operator", "--kubeconfig", str(kubeconfig), "--resync-seconds", "5"]
    for namespace in watch:
        args += ["--namespace", namespace]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield log
    finally:
        stop_process(proc, timeout=20)
