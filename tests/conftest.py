"""Suite-wide fixtures: the real Kubernetes control plane (kwok-simulated nodes).

``kube`` (session): a cluster started from tests/cluster/up.sh, or the one named by
``SLEUTH_KUBECONFIG`` (e.g. after ``make cluster-up``), stopped at the end when this session
started it. When the binaries genuinely cannot be built the cluster tests are skipped with the
reason — except under CI (``CI=true``), where that is a failure.

``scripted``: the scripted model server (sleuth.scripted) in a thread, for the folders that
drive a model client with it (tests/core, tests/agent).

The collection hooks spread the suite over pytest-xdist's workers (tests/support/workers.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.scripted import ScriptedServer
from tests.support.kubecluster import KubeCluster
from tests.support.workers import mark_groups, order_for_workers

ROOT = Path(__file__).resolve().parent.parent
CLUSTER_DIR = ROOT / "tests" / "cluster"

# One real node per machine: its session fixture is registered here, once, for every folder
# that needs it (tests/cluster, tests/e2e) — two registrations would compete for the node.
sys.path.insert(0, str(CLUSTER_DIR))
from realnode_kit import netpol_enforcer, node_namespace, real_node  # noqa: E402

# The trace backend (Jaeger on loopback ports) of the tracing tests, one per session.
from tests.support.jaeger import jaeger  # noqa: E402

__all__ = ["jaeger", "netpol_enforcer", "node_namespace", "real_node"]


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    refuse_long_ids(items)
    mark_groups(items)  # before pytest-xdist's own hook reads the groups
    yield
    order_for_workers(config, items)  # after deselection and pytest's own reordering


# pytest puts the running test's id into PYTEST_CURRENT_TEST, which every process a fixture
# starts inherits; Linux refuses a single environment string over 128 KiB (E2BIG), so a test
# parametrized with a 200 kB body and no ids made the first service its fixture started fail, in
# whichever order the workers happened to reach it.
MAX_TEST_ID = 1_000


def refuse_long_ids(items: list[pytest.Item]) -> None:
    long = [item.nodeid[:100] for item in items if len(item.nodeid) > MAX_TEST_ID]
    if long:
        raise pytest.UsageError(
            f"{len(long)} test ids are longer than {MAX_TEST_ID} characters (give the "
            f"parametrization ids=): {long[:3]}"
        )


def _cache() -> Path:
    return Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the test control plane is required under CI: {reason}", pytrace=False)
    pytest.skip(f"test control plane unavailable: {reason}")


def _delete_stale_clusters(bin_dir: Path) -> None:
    """Remove clusters left by test sessions whose process is gone (killed runs)."""
    env = {**os.environ, "KWOK_WORKDIR": str(_cache() / "kwok")}
    listed = subprocess.run(
        [str(bin_dir / "kwokctl"), "get", "clusters"], capture_output=True, text=True, env=env
    )
    for name in listed.stdout.split():
        pid = name.removeprefix("sleuth-test-")
        if name.startswith("sleuth-test-") and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(
                [str(CLUSTER_DIR / "down.sh")],
                env={**env, "SLEUTH_CLUSTER": name},
                capture_output=True,
            )


@pytest.fixture(scope="session")
def kube() -> Iterator[KubeCluster]:
    given = os.environ.get("SLEUTH_KUBECONFIG")
    if given:
        yield KubeCluster(kubeconfig=Path(given), bin_dir=_cache() / "bin" / "current")
        return
    build = subprocess.run([str(CLUSTER_DIR / "build.sh")], capture_output=True, text=True)
    if build.returncode != 0:
        _unavailable(f"tests/cluster/build.sh failed:\n{build.stderr[-3000:]}")
    bin_dir = Path(build.stdout.strip().splitlines()[-1])
    _delete_stale_clusters(bin_dir)
    name = f"sleuth-test-{os.getpid()}"
    env = {**os.environ, "SLEUTH_CLUSTER": name}
    up = subprocess.run([str(CLUSTER_DIR / "up.sh")], capture_output=True, text=True, env=env)
    if up.returncode != 0:
        subprocess.run([str(CLUSTER_DIR / "down.sh")], env=env, capture_output=True)
        # The binaries exist, so a cluster that does not start is a failure, never a skip.
        pytest.fail(f"tests/cluster/up.sh failed:\n{up.stderr[-4000:]}", pytrace=False)
    cluster = KubeCluster(kubeconfig=Path(up.stdout.strip().splitlines()[-1]), bin_dir=bin_dir)
    try:
        yield cluster
    finally:
        subprocess.run([str(CLUSTER_DIR / "down.sh")], env=env, capture_output=True)


@pytest.fixture
def namespace(kube: KubeCluster) -> Iterator[str]:
    """A fresh namespace for one test, deleted afterwards (without waiting)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    kube.kubectl("create", "namespace", name)
    # The namespace's default ServiceAccount is created by kube-controller-manager.
    kube.kubectl("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s")
    try:
        yield name
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """The scripted model server, empty scenario (set one with ``set_scenario``)."""
    with ScriptedServer() as server:
        yield server
