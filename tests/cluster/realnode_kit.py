"""The ``real_node`` fixture: a test cluster with this machine joined as a real worker node.

``real_node`` (session) starts a cluster with ``tests/cluster/up.sh --real-node`` (kwok's
simulated H100 and CPU nodes, plus node ``sleuth-node``: containerd, kubelet, kube-proxy and
CoreDNS on this host — see node.py) and yields a :class:`RealNodeCluster` — the suite's
``KubeCluster`` (tests/support/kubecluster.py: ``kubeconfig``, ``bin_dir``, ``env``, ``run``,
``kubectl``, ``helm``, ``api``) plus the node's name, IP, images, and ``import_image()``. At the
end (also when a test or the start failed) it runs ``down.sh`` and fails the session's teardown
if anything is left on the machine: processes, iptables chains, the bridge, mounts, cgroups,
changed sysctls.

One real node per machine: the fixture holds an exclusive lock (``/run/lock/sleuth-node.lock``)
for the whole session, so concurrent sessions wait for each other; kwok-only clusters are not
affected. Under pytest-xdist every test that uses it runs on one worker (the ``real-node`` group,
tests/support/workers.py), so the workers of one session never wait on each other for it.
``SLEUTH_KUBECONFIG`` is ignored here (the node needs a cluster made for it).
Without root, or without the node's Debian packages, the tests are skipped with the reason —
except under CI (``CI=true``), where that is a failure.

Registered in tests/cluster/conftest.py; a test elsewhere gets it by importing it in the
top-level tests/conftest.py (``from realnode_kit import real_node``, with tests/cluster on
sys.path) — never from two conftests at once, or two sessions-scoped instances would compete
for the one node.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.kubecluster import KubeCluster
from tests.support.workers import scattered_real_node_tests

CLUSTER_DIR = Path(__file__).resolve().parent
LOCK = Path("/run/lock/sleuth-node.lock")
LOCK_WAIT_S = 1800
T = TypeVar("T")


def cache() -> Path:
    return Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))


def eventually(
    what: str, probe: Callable[[], T | None], timeout: float = 60, every: float = 0.5
) -> T:
    """Poll probe() until it returns something truthy; fail with the last value after timeout.

    An AssertionError or OSError (e.g. connection refused before kube-proxy has programmed a new
    Service) counts as "not yet".
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except (AssertionError, OSError) as err:
            last = err
        else:
            if last:
                return last  # type: ignore[no-any-return]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r})")
        time.sleep(every)


@dataclass(kw_only=True)
class RealNodeCluster(KubeCluster):
    """A running control plane with the real node joined: a ``KubeCluster``, plus the node."""

    name: str
    node_name: str = "sleuth-node"
    node_ip: str = "10.244.0.1"
    images: dict[str, str] = field(default_factory=dict)
    sysctls_before: Path | None = None

    def tool_path(self, tool: str) -> Path:
        """The cached binary, else the one on PATH (the node's tools)."""
        return self.bin_dir / tool if (self.bin_dir / tool).exists() else Path(tool)

    def get(self, *args: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.kubectl("get", *args, "-o", "json").stdout)
        return out

    def node(
        self, *args: str, check: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """Run tests/cluster/node.sh (up, down, status, import, leftovers, check-network)."""
        proc = subprocess.run(
            [str(CLUSTER_DIR / "node.sh"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "SLEUTH_CLUSTER": self.name},
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"node.sh {' '.join(args)} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-4000:]}"
            )
        return proc

    def import_image(self, archive: Path) -> None:
        """Import an OCI archive (tests/cluster/oci.py) into the node's containerd."""
        self.node("import", str(archive))

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.node("status").stdout)
        return out

    def leftovers(self) -> list[str]:
        args = ["leftovers"]
        if self.sysctls_before:
            args += ["--sysctls", str(self.sysctls_before)]
        found: list[str] = json.loads(self.node(*args, check=False).stdout or "[]")
        return found


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the real node is required under CI: {reason}", pytrace=False)
    pytest.skip(f"real node unavailable: {reason}")


def _reap_dead_sessions(bin_dir: Path) -> None:
    """Tear down real-node clusters of test sessions whose process is gone (killed runs), and
    with them the node if it is theirs. A node somebody started by hand is left alone."""
    env = {**os.environ, "KWOK_WORKDIR": str(cache() / "kwok")}
    listed = subprocess.run(
        [str(bin_dir / "kwokctl"), "get", "clusters"], capture_output=True, text=True, env=env
    )
    names = set(listed.stdout.split())
    state = Path("/run/sleuth-node/state.json")
    if state.exists():
        with contextlib.suppress(ValueError):
            names.add(str(json.loads(state.read_text()).get("cluster", "")))
    for name in sorted(names):
        pid = name.removeprefix("sleuth-node-")
        if name.startswith("sleuth-node-") and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            subprocess.run(
                [str(CLUSTER_DIR / "down.sh")],
                env={**env, "SLEUTH_CLUSTER": name},
                capture_output=True,
            )


def _missing_packages() -> list[str]:
    tools = ("containerd", "ctr", "runc", "iptables", "conntrack", "openssl", "ip", "go")
    missing = [t for t in tools if not shutil.which(t)]
    missing += [
        p for p in ("/usr/lib/cni/bridge", "/usr/lib/cni/host-local") if not Path(p).exists()
    ]
    return missing


@pytest.fixture(scope="session")
def real_node(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealNodeCluster]:
    scattered = scattered_real_node_tests(request.session)
    if scattered:
        # Another worker would hold the lock below for its whole session: fail now, not then.
        pytest.fail(
            "the real-node tests must run on one pytest-xdist worker (--dist loadgroup, "
            f"tests/support/workers.py); not grouped: {', '.join(scattered[:3])}",
            pytrace=False,
        )
    if os.geteuid() != 0:
        _unavailable("it needs root (network, mounts, cgroups)")
    missing = _missing_packages()
    if missing:
        _unavailable(f"missing {', '.join(missing)} (make node-packages)")
    build = subprocess.run([str(CLUSTER_DIR / "build.sh")], capture_output=True, text=True)
    if build.returncode != 0:
        _unavailable(f"tests/cluster/build.sh failed:\n{build.stderr[-3000:]}")
    bin_dir = Path(build.stdout.strip().splitlines()[-1])

    LOCK.parent.mkdir(parents=True, exist_ok=True)
    lock = LOCK.open("w")
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                pytest.fail(
                    f"another session held the real node for {LOCK_WAIT_S} s", pytrace=False
                )
            time.sleep(2)

    _reap_dead_sessions(bin_dir)
    name = f"sleuth-node-{os.getpid()}"
    env = {**os.environ, "SLEUTH_CLUSTER": name}
    snapshot = tmp_path_factory.mktemp("real-node") / "sysctls.json"
    snapshot.write_text(
        subprocess.run(
            [str(CLUSTER_DIR / "node.sh"), "sysctls"], capture_output=True, text=True, check=True
        ).stdout
    )
    cluster = RealNodeCluster(
        kubeconfig=Path(), bin_dir=bin_dir, name=name, sysctls_before=snapshot
    )
    try:
        up = subprocess.run(
            [str(CLUSTER_DIR / "up.sh"), "--real-node"], capture_output=True, text=True, env=env
        )
        if up.returncode != 0:
            pytest.fail(
                f"tests/cluster/up.sh --real-node failed:\n{up.stderr[-6000:]}", pytrace=False
            )
        cluster.kubeconfig = Path(up.stdout.strip().splitlines()[-1])
        cluster.images = dict(cluster.status().get("images", {}))
        yield cluster
    finally:
        down = subprocess.run(
            [str(CLUSTER_DIR / "down.sh")], capture_output=True, text=True, env=env
        )
        left = cluster.leftovers()
        lock.close()
        if down.returncode != 0 or left:
            pytest.fail(
                f"the real node was not torn down completely (down.sh exited {down.returncode}):\n"
                + "\n".join(left)
                + f"\n{down.stderr[-3000:]}",
                pytrace=False,
            )


@pytest.fixture
def node_namespace(real_node: RealNodeCluster) -> Iterator[str]:
    """A fresh namespace in the real-node cluster, deleted afterwards (without waiting)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    real_node.kubectl("create", "namespace", name)
    real_node.kubectl("wait", "--for=create", "serviceaccount/default", "-n", name, "--timeout=60s")
    try:
        yield name
    finally:
        real_node.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture
def netpol_enforcer(real_node: RealNodeCluster) -> Iterator[dict[str, Any]]:
    """SIG Network's kube-network-policies enforcing NetworkPolicies on the node
    (tests/cluster/node_netpol.py): its status at the start; stopped, and checked to have left
    nothing, afterwards."""
    status: dict[str, Any] = json.loads(real_node.node("netpol", "up").stdout)
    try:
        yield status
    finally:
        left = json.loads(real_node.node("netpol", "down", check=False).stdout or "[]")
        assert left == [], f"the enforcer left {left}"
