"""The test cluster's real worker node: containerd, runc, CNI bridge, kubelet, kube-proxy, CoreDNS.

    tests/cluster/node.sh up --kubeconfig KUBECONFIG   # join this machine to a running cluster
    tests/cluster/node.sh down                          # stop it and undo everything it changed
    tests/cluster/node.sh status                        # JSON: PIDs, RSS, images, addresses
    tests/cluster/node.sh import ARCHIVE...             # import OCI archives into containerd
    tests/cluster/node.sh leftovers [--sysctls F]       # JSON list of what a `down` failed to undo
    tests/cluster/node.sh check-network                 # JSON list of what breaks the network rule
    tests/cluster/node.sh sysctls                       # JSON snapshot of the sysctls it watches
    tests/cluster/node.sh owner                         # the cluster whose node is up, if any
    tests/cluster/node.sh netpol up|down|status         # NetworkPolicy enforcement (node_netpol.py)

(``tests/cluster/up.sh --real-node`` starts a cluster and calls ``up``; ``down.sh`` calls
``down``.) Everything runs as background processes of this host whose PIDs (with their start
times, so a reused PID is never killed) are recorded in /run/sleuth-node/state.json. One real
node per machine: the bridge name, node IP and ports (kubelet 10250, DNS 53) are fixed.

The network rule: traffic goes only to loopback and to addresses inside the network namespaces
the node itself made (its pods). Pods get no default route — only the pod and service CIDRs, via
the bridge; the service CIDR is routed to the bridge on the host, never the uplink; the CNI
bridge does not masquerade; CoreDNS has no upstream; kubelet, NodePorts and DNS listen on the
bridge address only. Held by iptables (mangle table, ahead of anything kube-proxy adds): packets
forwarded to or from an uplink interface are dropped; packets leaving an uplink that were
DNAT'ed from a service IP are dropped; and every node process runs with its own group id, whose
packets to an uplink are dropped — so containerd cannot even try to pull an image that was not
imported. ``up`` checks the routes and rules before it returns.

Layout: node_config.py (addresses, paths, configuration files), node_host.py (processes,
sysctls, bridge, guard rules, chains, mounts, cgroups, certificates), node_images.py (the pause
and probe images), node_netpol.py (the NetworkPolicy enforcer a test may start), this file (up,
down, leftovers, the CLI). Standard library only, plus
openssl, iproute2, iptables, conntrack, containerd, runc and the CNI plugins from Debian, and
the binaries tests/cluster/build.sh builds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import node_netpol
from node_config import (
    BIN,
    BRIDGE,
    CLUSTER_CIDR,
    CONTAINERD_SOCK,
    DNS_READY,
    LOGS,
    NODE_IP,
    NODE_LABEL,
    NODE_NAME,
    NODE_SYSCTLS,
    NONROOT,
    PAUSE_REF,
    POD_LOGS,
    PROBE_REF,
    PROXY_HEALTHZ,
    ROOT,
    RUN,
    RUNC_ROOT,
    SERVICE_CIDR,
    SYSCTL_SAVED,
    cni_config,
    containerd_config,
    corefile,
    dns_objects,
    kube_proxy_config,
    kubelet_config,
    write_kubeconfig,
)
from node_host import (
    alive,
    cgroup_dirs,
    check_alive,
    check_network_rule,
    http_ok,
    kubeconfig_info,
    kubectl,
    leftover_chains,
    link_exists,
    load_state,
    log,
    mint_cert,
    mounts_under,
    node_processes,
    remove_chains,
    restore_sysctls,
    rss_mib,
    run,
    save_state,
    setup_bridge,
    setup_guard,
    spawn,
    stop,
    sysctl_snapshot,
    uplinks,
    wait_for,
    write_sysctl,
)
from node_images import build_image, import_images

NEEDS_BUILT = ("kubelet", "kube-proxy", "coredns", "kubectl", "crictl")
NEEDS_TOOLS = [
    "containerd",
    "ctr",
    "runc",
    "containerd-shim-runc-v2",
    "iptables",
    "conntrack",
    "openssl",
    "ip",
    "go",
]
NEEDS_CNI = ("bridge", "host-local", "loopback", "portmap")


def require() -> None:
    if os.geteuid() != 0:
        raise SystemExit("node.py: the real node needs root (network, mounts, cgroups)")
    missing = [str(BIN / b) for b in NEEDS_BUILT if not (BIN / b).exists()]
    missing += [t for t in NEEDS_TOOLS if not shutil.which(t)]
    missing += [f"/usr/lib/cni/{p}" for p in NEEDS_CNI if not Path(f"/usr/lib/cni/{p}").exists()]
    if missing:
        raise SystemExit(
            f"node.py: missing {', '.join(missing)} (tests/cluster/build.sh; make node-packages)"
        )


def fail_point(step: str) -> None:
    """A test hook: SLEUTH_NODE_FAIL_AFTER=<step> makes `up` fail right after that step
    (network, containerd, kubelet, kube-proxy), to prove `down` cleans up a half-made node."""
    if os.environ.get("SLEUTH_NODE_FAIL_AFTER") == step:
        raise RuntimeError(f"failing after {step} (SLEUTH_NODE_FAIL_AFTER)")


class AlreadyUp(Exception):
    """Another real node runs on this machine (it is left alone)."""


def up(kubeconfig: Path, cluster: str, extra_images: list[Path]) -> dict[str, Any]:
    require()
    state = load_state()
    if state.get("procs") and any(alive(p) for p in state["procs"].values()):
        raise AlreadyUp(
            f"node.py: a real node is already up (cluster {state.get('cluster')!r}); "
            "one per machine — run tests/cluster/node.sh down first"
        )
    if state or RUN.exists() or link_exists(BRIDGE):
        log("leftovers of an earlier node found; cleaning them up first")
        problems = down()
        if problems:
            raise RuntimeError("could not clean up an earlier node: " + "; ".join(problems))
    t0 = time.monotonic()
    timings: dict[str, float] = {}
    info = kubeconfig_info(kubeconfig)
    for d in (RUN, ROOT):
        d.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(LOGS, ignore_errors=True)
    LOGS.mkdir(parents=True)
    state = {
        "cluster": cluster,
        "kubeconfig": str(kubeconfig.resolve()),
        "node": NODE_NAME,
        "node_ip": NODE_IP,
        "run_containerd_existed": Path("/run/containerd").exists(),
        "var_lib_cni_existed": Path("/var/lib/cni").exists(),
        "var_log_containers_existed": Path("/var/log/containers").exists(),
        "procs": {},
    }
    save_state(state)
    if not SYSCTL_SAVED.exists():
        SYSCTL_SAVED.write_text(json.dumps(sysctl_snapshot(), indent=1))

    log("network: bridge, routes, sysctls, guard rules")
    for key, value in NODE_SYSCTLS.items():
        write_sysctl(key, value)
    setup_bridge()
    devs = uplinks()
    state["uplinks"] = devs
    save_state(state)
    setup_guard(devs)
    fail_point("network")

    log("certificates and configuration")
    certs = RUN / "pki"
    certs.mkdir(exist_ok=True)
    ca, ca_key, server = info["ca"], info["ca_key"], info["server"]
    k_crt, k_key = mint_cert(
        certs / "kubelet-client", f"system:node:{NODE_NAME}", ca, ca_key, org="system:nodes"
    )
    s_crt, s_key = mint_cert(
        certs / "kubelet-serving",
        NODE_NAME,
        ca,
        ca_key,
        ips=(NODE_IP,),
        dns=(NODE_NAME,),
        server=True,
    )
    p_crt, p_key = mint_cert(certs / "kube-proxy", "system:kube-proxy", ca, ca_key)
    d_crt, d_key = mint_cert(certs / "coredns", "sleuth-node:coredns", ca, ca_key)
    write_kubeconfig(RUN / "kubelet.kubeconfig", server, ca, k_crt, k_key, "kubelet")
    write_kubeconfig(RUN / "kube-proxy.kubeconfig", server, ca, p_crt, p_key, "kube-proxy")
    write_kubeconfig(RUN / "coredns.kubeconfig", server, ca, d_crt, d_key, "coredns")
    (RUN / "containerd.toml").write_text(containerd_config())
    (RUN / "registry.d").mkdir(exist_ok=True)
    (RUN / "cni").mkdir(exist_ok=True)
    (RUN / "cni" / "10-sleuth-node.conflist").write_text(json.dumps(cni_config(), indent=1))
    (RUN / "kubelet.yaml").write_text(json.dumps(kubelet_config(ca, s_crt, s_key), indent=1))
    (RUN / "kube-proxy.yaml").write_text(
        json.dumps(kube_proxy_config(RUN / "kube-proxy.kubeconfig"), indent=1)
    )
    (RUN / "Corefile").write_text(corefile(RUN / "coredns.kubeconfig"))

    log("images")
    t = time.monotonic()
    pause = build_image("pause", PAUSE_REF, ["/pause"], "65535:65535")
    probe = build_image("probe", PROBE_REF, ["/probe"], f"{NONROOT}:{NONROOT}")
    timings["build_images_s"] = round(time.monotonic() - t, 1)

    t = time.monotonic()
    spawn(state, "containerd", ["containerd", "--config", str(RUN / "containerd.toml")])
    wait_for(
        "containerd's socket",
        lambda: (
            check_alive(state, "containerd")
            and run("ctr", "--address", CONTAINERD_SOCK, "version", check=False).returncode == 0
        ),
        60,
    )
    timings["containerd_ready_s"] = round(time.monotonic() - t, 1)
    t = time.monotonic()
    import_images([pause, probe, *extra_images])
    state["images"] = {"pause": PAUSE_REF, "probe": PROBE_REF}
    timings["import_images_s"] = round(time.monotonic() - t, 1)
    save_state(state)

    fail_point("containerd")
    kubectl(kubeconfig, "apply", "-f", "-", input=json.dumps(dns_objects()))

    t = time.monotonic()
    spawn(
        state,
        "kubelet",
        [
            str(BIN / "kubelet"),
            f"--config={RUN / 'kubelet.yaml'}",
            f"--kubeconfig={RUN / 'kubelet.kubeconfig'}",
            f"--root-dir={ROOT / 'kubelet'}",
            f"--cert-dir={RUN / 'pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_IP}",
            f"--node-labels={NODE_LABEL}=true",
            "--v=1",
        ],
    )

    def node_ready() -> bool:
        check_alive(state, "kubelet")
        check_alive(state, "containerd")
        out = kubectl(
            kubeconfig,
            "get",
            "node",
            NODE_NAME,
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
            check=False,
        )
        return out.stdout.strip() == "True"

    wait_for(f"node {NODE_NAME} Ready", node_ready, 180, 0.5)
    timings["kubelet_to_node_ready_s"] = round(time.monotonic() - t, 1)
    log(f"node {NODE_NAME} Ready {timings['kubelet_to_node_ready_s']} s after kubelet started")
    fail_point("kubelet")

    t = time.monotonic()
    spawn(
        state,
        "kube-proxy",
        [str(BIN / "kube-proxy"), f"--config={RUN / 'kube-proxy.yaml'}", "--v=1"],
    )
    wait_for(
        "kube-proxy healthz",
        lambda: (
            check_alive(state, "kube-proxy")
            and http_ok(f"http://127.0.0.1:{PROXY_HEALTHZ}/healthz")
        ),
        120,
    )
    timings["kube_proxy_ready_s"] = round(time.monotonic() - t, 1)
    fail_point("kube-proxy")

    t = time.monotonic()
    spawn(state, "coredns", [str(BIN / "coredns"), "-conf", str(RUN / "Corefile")])
    wait_for(
        "CoreDNS ready",
        lambda: check_alive(state, "coredns") and http_ok(f"http://127.0.0.1:{DNS_READY}/ready"),
        120,
    )
    timings["coredns_ready_s"] = round(time.monotonic() - t, 1)

    bad = check_network_rule()
    if bad:
        raise RuntimeError("the network rule does not hold:\n  " + "\n  ".join(bad))
    timings["total_s"] = round(time.monotonic() - t0, 1)
    state["timings"] = timings
    state["ready"] = True
    save_state(state)
    log(f"real node {NODE_NAME} up in {timings['total_s']} s: {json.dumps(timings)}")
    return state


@contextlib.contextmanager
def phase(what: str) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    if (took := time.monotonic() - t0) >= 0.5:
        log(f"{what}: {took:.1f} s")


def down() -> list[str]:
    """Undo everything `up` did (safe to run twice, or after a failed `up`); return problems."""
    problems: list[str] = []
    # First the NetworkPolicy enforcer, if a test started it: its divert rules, then itself.
    with phase("stopping the NetworkPolicy enforcer"):
        node_netpol.down(problems)
    state = load_state()
    procs: dict[str, Any] = state.get("procs", {})
    t0 = time.monotonic()
    if "kubelet" in procs:
        with phase("stopping kubelet"):
            stop(procs["kubelet"], "kubelet")
    if "containerd" in procs and alive(procs["containerd"]) and (BIN / "crictl").exists():
        # Stop and remove every pod sandbox while containerd runs: the CNI DEL releases the IPs,
        # the veths and the network namespaces.
        with phase("removing the pod sandboxes"):
            proc = run(
                BIN / "crictl",
                "--runtime-endpoint",
                f"unix://{CONTAINERD_SOCK}",
                "--timeout",
                "30s",
                "rmp",
                "--all",
                "--force",
                check=False,
                timeout=180,
            )
        if proc.returncode:
            log(f"crictl rmp --all failed (cleaning up by hand): {proc.stderr.strip()[-500:]}")
    for name in ("kube-proxy", "coredns", "containerd"):
        if name in procs:
            with phase(f"stopping {name}"):
                stop(procs[name], name)
    # Whatever is left: shims, containers (runc's root, kubepods cgroups), stray node processes.
    if RUNC_ROOT.exists():
        for ns in RUNC_ROOT.iterdir():
            listed = run("runc", "--root", ns, "list", "-q", check=False).stdout.split()
            for cid in listed:
                run("runc", "--root", ns, "delete", "--force", cid, check=False)
    for _ in range(3):
        left = node_processes()
        if not left:
            break
        for pid, _cmd in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
    for pid, cmd in node_processes():
        problems.append(f"process {pid} still alive: {cmd}")

    kubeconfig = state.get("kubeconfig")
    if kubeconfig and Path(kubeconfig).exists():
        with phase("deleting the node object"):
            kubectl(
                kubeconfig,
                "delete",
                "node",
                NODE_NAME,
                "--ignore-not-found",
                "--wait=false",
                check=False,
                timeout=30,
            )
        kubectl(
            kubeconfig,
            "delete",
            "-f",
            "-",
            "--ignore-not-found",
            "--wait=false",
            input=json.dumps(dns_objects()),
            check=False,
            timeout=30,
        )

    for point in mounts_under(ROOT, RUN, Path("/run/containerd")):
        if run("umount", point, check=False).returncode:
            run("umount", "-l", point, check=False)
    for point in mounts_under(ROOT, RUN):
        problems.append(f"still mounted: {point}")

    with phase("removing the iptables chains"):
        remove_chains(problems)
    for cidr in (CLUSTER_CIDR, SERVICE_CIDR):
        for flag in ("-s", "-d"):
            run("conntrack", "-D", flag, cidr, check=False)
    if link_exists(BRIDGE):
        out = run("ip", "-o", "link", "show", "master", BRIDGE, check=False).stdout
        for line in out.splitlines():
            run("ip", "link", "del", line.split(":")[1].strip().split("@")[0], check=False)
        run("ip", "link", "del", BRIDGE, check=False)
    run("ip", "route", "del", SERVICE_CIDR, check=False)
    if link_exists(BRIDGE):
        problems.append(f"bridge {BRIDGE} still exists")

    for d in cgroup_dirs():
        try:
            d.rmdir()
        except OSError as err:
            problems.append(f"cgroup {d}: {err}")

    restore_sysctls(problems)

    for link in Path("/var/log/containers").glob("*.log"):
        try:
            if os.readlink(link).startswith(str(POD_LOGS)):
                link.unlink()
        except OSError:
            pass
    for d in (ROOT / "containerd", ROOT / "kubelet", ROOT / "opt", POD_LOGS):
        shutil.rmtree(d, ignore_errors=True)
    if state and not state.get("run_containerd_existed", True):
        shutil.rmtree("/run/containerd", ignore_errors=True)
    results = Path("/var/lib/cni/results")
    for f in results.glob(f"{NODE_NAME}-*"):
        f.unlink(missing_ok=True)
    if state and not state.get("var_lib_cni_existed", True):
        shutil.rmtree("/var/lib/cni", ignore_errors=True)
    if state and not state.get("var_log_containers_existed", True):
        with contextlib.suppress(OSError):
            Path("/var/log/containers").rmdir()  # only when empty: kubelet made it for our pods
    if state:
        log(f"down in {time.monotonic() - t0:.1f} s")
    if not problems:
        shutil.rmtree(RUN, ignore_errors=True)
    else:  # keep the state (and the saved sysctls) so a second `down` can finish the job
        log("down left problems:\n  " + "\n  ".join(problems))
    return problems


def leftovers(sysctls_before: dict[str, str | None] | None = None) -> list[str]:
    """What a `down` should have undone and did not (empty = the machine is clean)."""
    found = [f"process {pid}: {cmd}" for pid, cmd in node_processes()]
    found += [f"iptables chain/rule: {c}" for c in leftover_chains()]
    found += node_netpol.leftovers()
    if link_exists(BRIDGE):
        found.append(f"bridge {BRIDGE}")
    if f"dev {BRIDGE}" in run("ip", "route", "show", check=False).stdout:
        found.append(f"a route via {BRIDGE}")
    found += [f"mount: {m}" for m in mounts_under(ROOT, RUN)]
    found += [f"cgroup: {d}" for d in cgroup_dirs()]
    for path in (RUN, ROOT / "containerd", ROOT / "kubelet", POD_LOGS):
        if path.exists():
            found.append(f"path: {path}")
    if sysctls_before is not None:
        now = sysctl_snapshot()
        found += [
            f"sysctl {k}: {now.get(k)!r}, was {v!r}"
            for k, v in sysctls_before.items()
            if now.get(k) != v
        ]
    return found


def status() -> dict[str, Any]:
    state = load_state()
    for name, proc in state.get("procs", {}).items():
        proc["alive"] = alive(proc)
        proc["rss_mib"] = rss_mib(int(proc["pid"])) if proc["alive"] else None
        proc.pop("cmd", None)
        state["procs"][name] = proc
    shims = [pid for pid, cmd in node_processes() if "containerd-shim" in cmd]
    state["shims"] = {str(pid): rss_mib(pid) for pid in shims}
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_up = sub.add_parser("up", help="start the real node and join it to a cluster")
    p_up.add_argument("--kubeconfig", type=Path, default=os.environ.get("KUBECONFIG"))
    p_up.add_argument("--cluster", default=os.environ.get("SLEUTH_CLUSTER", "sleuth"))
    p_up.add_argument(
        "--image",
        type=Path,
        action="append",
        default=[],
        help="an OCI archive to import as well (repeatable)",
    )
    sub.add_parser("down", help="stop it and undo every change")
    sub.add_parser("status", help="print the state as JSON (PIDs, RSS, images, timings)")
    p_imp = sub.add_parser("import", help="import OCI archives into the node's containerd")
    p_imp.add_argument("archives", type=Path, nargs="+")
    p_left = sub.add_parser("leftovers", help="print what is left of a node (JSON); exit 1 if any")
    p_left.add_argument("--sysctls", type=Path, help="a JSON snapshot to compare sysctls with")
    sub.add_parser("sysctls", help="print the watched sysctls as JSON")
    sub.add_parser("owner", help="print the cluster whose real node is up (nothing if none)")
    sub.add_parser("check-network", help="check the network rule; exit 1 if it does not hold")
    p_np = sub.add_parser("netpol", help="NetworkPolicy enforcement (kube-network-policies)")
    p_np.add_argument("action", choices=["up", "down", "status"])
    args = parser.parse_args(argv)

    if args.command == "up":
        if not args.kubeconfig:
            parser.error("--kubeconfig (or KUBECONFIG) is required")
        try:
            up(args.kubeconfig, args.cluster, args.image)
        except AlreadyUp as err:
            log(str(err))
            return 1
        except BaseException as err:
            log(f"up failed: {err}")
            if os.environ.get("SLEUTH_NODE_KEEP_FAILED"):
                log("SLEUTH_NODE_KEEP_FAILED is set: leaving it as it is for a look")
            else:
                log("tearing down what was started (SLEUTH_NODE_KEEP_FAILED=1 keeps it)")
                down()
            return 1
        print(json.dumps(status(), indent=1))
    elif args.command == "down":
        problems = down()
        return 1 if problems else 0
    elif args.command == "status":
        print(json.dumps(status(), indent=1))
    elif args.command == "import":
        import_images(args.archives)
    elif args.command == "leftovers":
        before = json.loads(args.sysctls.read_text()) if args.sysctls else None
        found = leftovers(before)
        print(json.dumps(found, indent=1))
        return 1 if found else 0
    elif args.command == "owner":
        state = load_state()
        if any(alive(p) for p in state.get("procs", {}).values()):
            print(state.get("cluster", "?"))
    elif args.command == "sysctls":
        print(json.dumps(sysctl_snapshot(), indent=1))
    elif args.command == "netpol":
        if args.action == "up":
            print(json.dumps(node_netpol.up(), indent=1))
        elif args.action == "down":
            problems = node_netpol.down()
            print(json.dumps(problems, indent=1))
            return 1 if problems else 0
        else:
            print(json.dumps(node_netpol.status(), indent=1))
    elif args.command == "check-network":
        bad = check_network_rule()
        print(json.dumps(bad, indent=1))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
