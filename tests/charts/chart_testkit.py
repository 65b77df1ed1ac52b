"""Helpers for the chart tests: the helm binary, rendering, and the value sets with goldens."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.paths import ROOT

CHART = ROOT / "charts" / "sleuth"
HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
VALUES = HERE / "values"
RELEASE = "sleuth"
RELEASE_NAMESPACE = "sleuth-system"
# Each value set: a name, and its values file (None: the chart's defaults).
VALUE_SETS: dict[str, Path | None] = {
    "default": None,
    "namespaced": VALUES / "namespaced.yaml",
    "monitoring": VALUES / "monitoring.yaml",
}


def helm_binary() -> Path:
    """The pinned helm, built by tests/cluster/build.sh (a no-op once cached)."""
    build = subprocess.run(
        [str(ROOT / "tests" / "cluster" / "build.sh")], capture_output=True, text=True
    )
    if build.returncode != 0:
        raise RuntimeError(f"tests/cluster/build.sh failed:\n{build.stderr[-3000:]}")
    return Path(build.stdout.strip().splitlines()[-1]) / "helm"


def run_helm(helm: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    home = "/tmp/sleuth-helm"
    env = {**os.environ, "HELM_CACHE_HOME": f"{home}/cache", "HELM_CONFIG_HOME": f"{home}/config"}
    env["HELM_DATA_HOME"] = f"{home}/data"
    proc = subprocess.run([str(helm), *args], capture_output=True, text=True, env=env, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


def template(helm: Path, values: Path | None = None, *sets: str) -> str:
    """`helm template` of the chart as release "sleuth" in "sleuth-system"."""
    args = ["template", RELEASE, str(CHART), "--namespace", RELEASE_NAMESPACE]
    if values is not None:
        args += ["-f", str(values)]
    for s in sets:
        args += ["--set", s]
    return run_helm(helm, *args).stdout


def documents(rendered: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(rendered) if d]


def find(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> list[dict[str, Any]]:
    return [
        d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]


def operator_args(docs: list[dict[str, Any]]) -> list[str]:
    """The operator container's arguments in a rendered Deployment."""
    (deployment,) = find(docs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    return args
