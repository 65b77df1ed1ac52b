"""The test cluster's real worker node: containerd, runc, CNI bridge, kubelet, kube-proxy, CoreDNS.

    tests/cluster/node.sh up --kubeconfig KUBECONFIG   # join this machine to a running cluster
    tests/cluster/node.sh down                          # stop it and undo everything it changed
    tests/cluster/node.sh status                        # JSON: PIDs, RSS, images, addresses
    tests/cluster/node.sh import ARCHIVE...             # import OCI archives into containerd
    tests/cluster/node.sh leftovers                     # JSON list of what a `down` failed to undo

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

Standard library only (plus openssl, iproute2, iptables, conntrack, containerd, runc and the CNI
plugins from Debian, and the binaries tests/cluster/build.sh builds).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
BIN = CACHE / "bin" / "current"

NODE_NAME = "sleuth-node"
BRIDGE = "sleuth0"
NODE_IP = "10.244.0.1"
NODE_SUBNET = "10.244.0.0/24"  # this node's pods (host-local IPAM)
CLUSTER_CIDR = "10.244.0.0/16"  # the cluster's pod CIDR
SERVICE_CIDR = "10.0.0.0/24"  # kube-apiserver's --service-cluster-ip-range (its default)
KUBERNETES_SERVICE_IP = "10.0.0.1"
DNS_SERVICE_IP = "10.0.0.10"
CLUSTER_DOMAIN = "cluster.local"
NODE_GID = 64250  # every node process runs with this group id (see the network rule)
NODE_LABEL = "sleuth.dev/real-node"
KUBELET_PORT = 10250
KUBELET_HEALTHZ = 10248
PROXY_HEALTHZ = 10256
PROXY_METRICS = 10249
DNS_READY = 10181

RUN = Path("/run/sleuth-node")  # state, configs, certificates, containerd's state and socket
ROOT = Path("/var/lib/sleuth-node")  # containerd's root (images), kubelet's root, pod logs
LOGS = ROOT / "logs"  # the last run's process logs; kept after `down` for a post-mortem
STATE = RUN / "state.json"
SYSCTL_SAVED = RUN / "sysctl.json"
CONTAINERD_SOCK = RUN / "containerd" / "containerd.sock"
RUNC_ROOT = RUN / "runc"
POD_LOGS = ROOT / "pods"
CHAIN_PREFIXES = ("KUBE-", "CNI-", "SLEUTH-")
GUARD = "SLEUTH-NODE-GUARD"

# Every sysctl the node (or kubelet, kube-proxy, the CNI plugins) may change; saved before `up`,
# restored by `down`. Per-interface ones go with the interfaces.
SYSCTLS = [
    "net/ipv4/ip_forward",
    "net/ipv6/conf/all/forwarding",
    "net/ipv6/conf/default/forwarding",
    "net/ipv4/conf/all/route_localnet",
    "net/ipv4/conf/all/rp_filter",
    "net/ipv4/conf/default/rp_filter",
    "net/ipv4/conf/all/forwarding",
    "net/ipv4/conf/default/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/bridge/bridge-nf-call-arptables",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
    "net/netfilter/nf_conntrack_tcp_be_liberal",
    "net/netfilter/nf_conntrack_udp_timeout",
    "net/netfilter/nf_conntrack_udp_timeout_stream",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
]
# What `up` itself sets (kubelet then sets vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
# kernel.panic_on_oops and kernel.keys.root_max*; the bridge plugin sets ip_forward too).
NODE_SYSCTLS = {
    "net/ipv4/ip_forward": "1",
    "net/bridge/bridge-nf-call-iptables": "1",
    "net/bridge/bridge-nf-call-ip6tables": "1",
}

COMPONENTS = ("containerd", "kubelet", "kube-proxy", "coredns")


def log(msg: str) -> None:
    print(f"[node {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(
    *cmd: str | Path, check: bool = True, input: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(c) for c in cmd], input=input, capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(map(str, cmd))} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}"
        )
    return proc


def wait_for(what: str, predicate: Any, timeout: float, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
# State


def load_state() -> dict[str, Any]:
    try:
        return dict(json.loads(STATE.read_text()))
    except (OSError, ValueError):
        return {}


def save_state(state: dict[str, Any]) -> None:
    RUN.mkdir(parents=True, exist_ok=True)
    tmp = STATE.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
    tmp.replace(STATE)


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def alive(proc: dict[str, Any]) -> bool:
    return bool(start_time(int(proc["pid"])) == proc["start"])


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


# ---------------------------------------------------------------------------------------------
# sysctls


def read_sysctl(key: str) -> str | None:
    try:
        return " ".join(Path("/proc/sys", key).read_text().split())
    except OSError:
        return None


def write_sysctl(key: str, value: str) -> None:
    Path("/proc/sys", key).write_text(value + "\n")


def sysctl_snapshot() -> dict[str, str | None]:
    return {key: read_sysctl(key) for key in SYSCTLS}


def restore_sysctls(problems: list[str]) -> None:
    try:
        saved = json.loads(SYSCTL_SAVED.read_text())
    except (OSError, ValueError):
        return
    failed = False
    for key, value in saved.items():
        if value is None or read_sysctl(key) == value:
            continue
        try:
            write_sysctl(key, value)
        except OSError as err:
            failed = True
            problems.append(f"sysctl {key}: could not restore {value!r}: {err}")
    if not failed:
        SYSCTL_SAVED.unlink()


# ---------------------------------------------------------------------------------------------
# Network


def uplinks() -> list[str]:
    """Interfaces that lead off the machine: those of the default routes (IPv4 and IPv6)."""
    devs: list[str] = []
    for family in ("-4", "-6"):
        out = run("ip", family, "-o", "route", "show", "default", check=False).stdout
        for line in out.splitlines():
            words = line.split()
            if "dev" in words:
                dev = words[words.index("dev") + 1]
                if dev not in devs and dev != BRIDGE:
                    devs.append(dev)
    if not devs:  # no default route: treat every non-loopback interface with an address as one
        out = run("ip", "-o", "addr", "show", "scope", "global", check=False).stdout
        for line in out.splitlines():
            dev = line.split()[1]
            if dev not in devs and dev not in ("lo", BRIDGE) and not dev.startswith("veth"):
                devs.append(dev)
    return devs


def link_exists(name: str) -> bool:
    return run("ip", "link", "show", name, check=False).returncode == 0


def setup_bridge() -> None:
    if not link_exists(BRIDGE):
        run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "replace", f"{NODE_IP}/24", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    # The service CIDR goes to the bridge (kube-proxy DNATs it there), never to the uplink.
    run("ip", "route", "replace", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP)


def iptables_bins() -> list[str]:
    return [b for b in ("iptables", "ip6tables") if shutil.which(b)]


def setup_guard(devs: list[str]) -> None:
    """The network rule, in the mangle table (ahead of the filter rules kube-proxy inserts)."""
    for ipt in iptables_bins():
        v6 = ipt == "ip6tables"
        for hook in ("FORWARD", "POSTROUTING", "PREROUTING"):
            chain = f"{GUARD}-{hook[:4]}"
            run(ipt, "-w", "-t", "mangle", "-N", chain, check=False)
            run(ipt, "-w", "-t", "mangle", "-F", chain)
            if run(ipt, "-w", "-t", "mangle", "-C", hook, "-j", chain, check=False).returncode:
                run(ipt, "-w", "-t", "mangle", "-I", hook, "1", "-j", chain)
        for dev in devs:
            fwd = f"{GUARD}-FORW"
            run(ipt, "-w", "-t", "mangle", "-A", fwd, "-i", dev, "-j", "DROP")
            run(ipt, "-w", "-t", "mangle", "-A", fwd, "-o", dev, "-j", "DROP")
            post = f"{GUARD}-POST"
            run(
                ipt,
                "-w",
                "-t",
                "mangle",
                "-A",
                post,
                "-o",
                dev,
                "-m",
                "owner",
                "--gid-owner",
                str(NODE_GID),
                "-j",
                "DROP",
            )
            if not v6:
                run(
                    ipt,
                    "-w",
                    "-t",
                    "mangle",
                    "-A",
                    post,
                    "-o",
                    dev,
                    "-m",
                    "conntrack",
                    "--ctstate",
                    "DNAT",
                    "--ctorigdst",
                    SERVICE_CIDR,
                    "-j",
                    "DROP",
                )
                pre = f"{GUARD}-PRER"
                for cidr in (CLUSTER_CIDR, SERVICE_CIDR):
                    run(ipt, "-w", "-t", "mangle", "-A", pre, "-i", dev, "-d", cidr, "-j", "DROP")


def iptables_rules(ipt: str) -> list[tuple[str, str]]:
    """(table, '-A CHAIN ...' or '-N CHAIN') lines of every table."""
    out = run(f"{ipt}-save", check=False).stdout
    rules, table = [], ""
    for line in out.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            rules.append((table, "-N " + line[1:].split()[0]))
        elif line.startswith("-A "):
            rules.append((table, line))
    return rules


def ours(chain: str) -> bool:
    return chain.startswith(CHAIN_PREFIXES)


def leftover_chains() -> list[str]:
    found = []
    for ipt in iptables_bins():
        for table, rule in iptables_rules(ipt):
            words = rule.split()
            if words[0] == "-N" and ours(words[1]):
                found.append(f"{ipt} -t {table} {words[1]}")
            elif words[0] == "-A" and "-j" in words and ours(words[words.index("-j") + 1]):
                found.append(f"{ipt} -t {table} {rule}")
    return found


def remove_chains(problems: list[str]) -> None:
    """Delete every KUBE-*, CNI-* and SLEUTH-* chain and every rule that jumps to one."""
    import shlex

    for ipt in iptables_bins():
        for table, rule in iptables_rules(ipt):
            words = shlex.split(rule)
            if words[0] != "-A" or ours(words[1]):
                continue
            if "-j" in words and ours(words[words.index("-j") + 1]):
                run(ipt, "-w", "-t", table, "-D", *words[1:], check=False)
        chains = [(t, r.split()[1]) for t, r in iptables_rules(ipt) if r.startswith("-N ")]
        for table, chain in chains:
            if ours(chain):
                run(ipt, "-w", "-t", table, "-F", chain, check=False)
        for table, chain in chains:
            if ours(chain):
                proc = run(ipt, "-w", "-t", table, "-X", chain, check=False)
                if proc.returncode:
                    problems.append(f"{ipt} -t {table} -X {chain}: {proc.stderr.strip()}")


def check_network_rule() -> list[str]:
    """What violates the network rule right now (empty when it holds)."""
    bad = []
    devs = uplinks()
    for probe in (DNS_SERVICE_IP, KUBERNETES_SERVICE_IP, "10.0.0.200"):
        route = run("ip", "route", "get", probe, check=False).stdout
        if f"dev {BRIDGE}" not in route:
            bad.append(f"service IP {probe} is not routed to {BRIDGE}: {route.strip()}")
    mangle = run("iptables-save", "-t", "mangle", check=False).stdout
    for dev in devs:
        for needle in (f"-A {GUARD}-FORW -i {dev} -j DROP", f"-A {GUARD}-FORW -o {dev} -j DROP"):
            if needle not in mangle:
                bad.append(f"missing guard rule: {needle}")
        if f"-o {dev} -m owner --gid-owner {NODE_GID} -j DROP" not in mangle:
            bad.append(f"missing guard rule: node processes to {dev}")
    for hook in ("FORWARD", "POSTROUTING"):
        first = [ln for ln in mangle.splitlines() if ln.startswith(f"-A {hook} ")][:1]
        if not first or f"-j {GUARD}-{hook[:4]}" not in first[0]:
            bad.append(f"mangle {hook} does not start with the guard: {first}")
    return bad


# ---------------------------------------------------------------------------------------------
# Certificates and kubeconfigs


def kubeconfig_info(kubeconfig: Path) -> dict[str, str]:
    raw = json.loads(
        run(
            BIN / "kubectl",
            "config",
            "view",
            "--raw",
            "--minify",
            "-o",
            "json",
            "--kubeconfig",
            kubeconfig,
        ).stdout
    )
    cluster = raw["clusters"][0]["cluster"]
    ca = cluster.get("certificate-authority")
    if not ca:
        raise RuntimeError(f"{kubeconfig} names no certificate-authority file")
    ca_key = Path(ca).with_suffix(".key")
    if not ca_key.exists():
        raise RuntimeError(f"no CA key beside {ca} (a kwokctl cluster keeps ca.key in its pki)")
    return {"server": cluster["server"], "ca": ca, "ca_key": str(ca_key)}


def mint_cert(
    out: Path,
    cn: str,
    ca: str,
    ca_key: str,
    *,
    org: str = "",
    ips: tuple[str, ...] = (),
    dns: tuple[str, ...] = (),
    server: bool = False,
) -> tuple[Path, Path]:
    key, crt = out.with_suffix(".key"), out.with_suffix(".crt")
    subj = f"/CN={cn}" + (f"/O={org}" if org else "")
    ext = out.with_suffix(".ext")
    lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment"]
    lines.append("extendedKeyUsage=" + ("serverAuth" if server else "clientAuth"))
    sans = [f"IP:{ip}" for ip in ips] + [f"DNS:{d}" for d in dns]
    if sans:
        lines.append("subjectAltName=" + ",".join(sans))
    ext.write_text("\n".join(lines) + "\n")
    csr = out.with_suffix(".csr")
    run(
        "openssl",
        "req",
        "-new",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        key,
        "-subj",
        subj,
        "-out",
        csr,
    )
    run(
        "openssl",
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-CAserial",
        out.with_suffix(".srl"),
        "-days",
        "30",
        "-sha256",
        "-extfile",
        ext,
        "-out",
        crt,
    )
    key.chmod(0o600)
    return crt, key


def write_kubeconfig(path: Path, server: str, ca: str, crt: Path, key: Path, user: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "sleuth", "cluster": {"server": server, "certificate-authority": ca}}
        ],
        "users": [{"name": user, "user": {"client-certificate": str(crt), "client-key": str(key)}}],
        "contexts": [{"name": "sleuth", "context": {"cluster": "sleuth", "user": user}}],
        "current-context": "sleuth",
    }
    path.write_text(json.dumps(config, indent=1))
    path.chmod(0o600)


# ---------------------------------------------------------------------------------------------
# Images: the pause (sandbox) image and the probe test image, built from tests/cluster/images


PAUSE_REF = "sleuth.local/pause:v1"
PROBE_REF = "sleuth.local/probe:v1"
NONROOT = 65532


def _images_hash(program: str) -> str:
    h = hashlib.sha256()
    for p in sorted((HERE / "images").rglob("*")):
        if p.is_file() and (p.parent.name == program or p.name == "go.mod"):
            h.update(p.relative_to(HERE).as_posix().encode() + b"\0" + p.read_bytes())
    h.update((HERE / "oci.py").read_bytes())
    h.update(run("go", "version").stdout.encode())
    return h.hexdigest()[:16]


def build_image(program: str, ref: str, entrypoint: list[str], user: str) -> Path:
    """Build tests/cluster/images/<program> (static Go) and pack it; cached by a source hash."""
    out = CACHE / "images" / f"{program}-{_images_hash(program)}"
    archive = out / "image.tar"
    if archive.exists():
        return archive
    log(f"building the {program} image ({ref})")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{program}-", dir=out.parent))
    try:
        rootfs = tmp / "rootfs"
        (rootfs / "etc").mkdir(parents=True)
        (rootfs / "tmp").mkdir(mode=0o1777)
        (rootfs / "tmp").chmod(0o1777)
        (rootfs / "etc" / "passwd").write_text(
            f"root:x:0:0:root:/:/sbin/nologin\nnonroot:x:{NONROOT}:{NONROOT}:nonroot:/:/sbin/nologin\n"
        )
        (rootfs / "etc" / "group").write_text(f"root:x:0:\nnonroot:x:{NONROOT}:\n")
        env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod -buildvcs=false"}
        subprocess.run(
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                "-s -w",
                "-o",
                str(rootfs / program),
                f"./{program}",
            ],
            cwd=HERE / "images",
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        sys.path.insert(0, str(HERE))
        import oci

        oci.pack(rootfs, tmp / "image.tar", ref=ref, entrypoint=entrypoint, user=user)
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return archive


def ctr(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return run("ctr", "--address", CONTAINERD_SOCK, "-n", "k8s.io", *args, timeout=timeout)


def import_images(archives: list[Path]) -> None:
    for archive in archives:
        t0 = time.monotonic()
        out = ctr("images", "import", str(archive)).stdout
        log(f"imported {archive} in {time.monotonic() - t0:.1f} s: {out.strip()}")


# ---------------------------------------------------------------------------------------------
# Processes


def node_env() -> dict[str, str]:
    keep = ("HOME", "LANG", "TZ")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PATH"] = f"{BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env  # no *_proxy variables: nothing of the node talks through the host's proxy


def spawn(state: dict[str, Any], name: str, cmd: list[str]) -> dict[str, Any]:
    LOGS.mkdir(parents=True, exist_ok=True)
    with (LOGS / f"{name}.log").open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=node_env(),
            cwd="/",
            start_new_session=True,
            group=NODE_GID,
            extra_groups=[],
        )
    entry = {
        "pid": proc.pid,
        "start": wait_for(f"{name} to start", lambda: start_time(proc.pid), 5),
    }
    entry["cmd"] = cmd
    state.setdefault("procs", {})[name] = entry
    save_state(state)
    log(f"{name} started, pid {proc.pid} (log {LOGS / (name + '.log')})")
    return entry


def check_alive(state: dict[str, Any], name: str) -> bool:
    proc = state.get("procs", {}).get(name)
    if proc and not alive(proc):
        tail = (LOGS / f"{name}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} exited; the end of its log:\n{tail}")
    return True


def stop(proc: dict[str, Any], name: str, timeout: float = 15) -> None:
    pid = int(proc["pid"])
    if not alive(proc):
        return
    os.kill(pid, signal.SIGTERM)
    try:
        wait_for(f"{name} (pid {pid}) to exit", lambda: not alive(proc), timeout, 0.1)
    except RuntimeError:
        log(f"{name} (pid {pid}) ignored SIGTERM; killing it")
        if alive(proc):
            os.kill(pid, signal.SIGKILL)
        wait_for(f"{name} (pid {pid}) to die", lambda: not alive(proc), 10, 0.1)


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def node_processes() -> list[tuple[int, str]]:
    """Processes this node made that are still alive: found by their group id (every node
    process and its children run with NODE_GID), their executable, a shim's socket address, or
    (containers) kubelet's kubepods cgroups."""
    found = []
    ours_exe = {str((BIN / c).resolve()) for c in ("kubelet", "kube-proxy", "coredns")}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            exe = os.readlink(d / "exe")
            gid = next(
                int(ln.split()[2])
                for ln in (d / "status").read_text().splitlines()
                if ln.startswith("Gid:")
            )
        except (OSError, StopIteration):
            continue
        if exe in ours_exe or gid == NODE_GID or f"-address {CONTAINERD_SOCK}" in cmdline:
            found.append((int(d.name), cmdline.strip()[:200]))
    for pid in cgroup_pids():
        if pid not in {p for p, _ in found}:
            found.append((pid, "(in a kubepods cgroup)"))
    return found


def cgroup_dirs() -> list[Path]:
    """kubelet's cgroups (cgroupfs driver) in every v1 controller or the v2 tree, deepest first."""
    base = Path("/sys/fs/cgroup")
    roots = [base / "kubepods"] + [c / "kubepods" for c in base.iterdir() if c.is_dir()]
    dirs: list[Path] = []
    for root in roots:
        if root.is_dir():
            dirs.extend(
                sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            )
            dirs.append(root)
    return dirs


def cgroup_pids() -> set[int]:
    pids: set[int] = set()
    for d in cgroup_dirs():
        with contextlib.suppress(OSError):
            pids.update(int(p) for p in (d / "cgroup.procs").read_text().split())
    return pids


def mounts_under(*prefixes: Path) -> list[str]:
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if any(point == str(p) or point.startswith(str(p) + "/") for p in prefixes):
            found.append(point)
    return sorted(set(found), key=lambda p: -len(p))


# ---------------------------------------------------------------------------------------------
# Configuration files


def containerd_config() -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{ROOT / "containerd"}"
state = "{RUN / "containerd"}"
oom_score = 0
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{CONTAINERD_SOCK}"

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{ROOT / "opt"}"

[{cri}]
  sandbox_image = "{PAUSE_REF}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true
  disable_hugetlb_controller = true
  max_concurrent_downloads = 1

[{cri}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "{RUN / "cni"}"
  max_conf_num = 1

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "{RUNC_ROOT}"

[{cri}.registry]
  config_path = "{RUN / "registry.d"}"
"""


def cni_config() -> dict[str, Any]:
    return {
        "cniVersion": "1.0.0",
        "name": NODE_NAME,
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "isDefaultGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(RUN / "cni-ipam"),
                    "ranges": [
                        [
                            {
                                "subnet": NODE_SUBNET,
                                "rangeStart": "10.244.0.10",
                                "rangeEnd": "10.244.0.250",
                                "gateway": NODE_IP,
                            }
                        ]
                    ],
                    # No default route: the pod and service CIDRs only, via the bridge.
                    "routes": [{"dst": CLUSTER_CIDR}, {"dst": SERVICE_CIDR}],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(ca: str, crt: Path, key: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": NODE_IP,
        "port": KUBELET_PORT,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": KUBELET_HEALTHZ,
        "tlsCertFile": str(crt),
        "tlsPrivateKeyFile": str(key),
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": ca},
        },
        "authorization": {"mode": "Webhook"},
        "containerRuntimeEndpoint": f"unix://{CONTAINERD_SOCK}",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,
        "failSwapOn": False,
        "clusterDNS": [DNS_SERVICE_IP],
        "clusterDomain": CLUSTER_DOMAIN,
        "resolvConf": "",  # pods with dnsPolicy Default get no nameserver (no upstream)
        "podLogsDir": str(POD_LOGS),
        "staticPodPath": "",
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "registerNode": True,
        "maxPods": 110,
        "serializeImagePulls": False,
        # A small, shared disk: never garbage-collect the imported images, evict only when
        # nearly full.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "imageMinimumGCAge": "87600h",
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
            "imagefs.inodesFree": "1%",
        },
        "evictionMinimumReclaim": {},
        "evictionPressureTransitionPeriod": "10s",
        "nodeStatusUpdateFrequency": "10s",
        "nodeStatusReportFrequency": "1m",
        "protectKernelDefaults": False,
        "shutdownGracePeriod": "0s",
        "volumeStatsAggPeriod": "1m",
        "cpuManagerPolicy": "none",
        "enableServer": True,
    }


def kube_proxy_config(kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "bindAddress": NODE_IP,
        "clusterCIDR": CLUSTER_CIDR,
        "healthzBindAddress": f"127.0.0.1:{PROXY_HEALTHZ}",
        "metricsBindAddress": f"127.0.0.1:{PROXY_METRICS}",
        "nodePortAddresses": [f"{NODE_IP}/32"],
        "oomScoreAdj": 0,
        # Leave the conntrack sysctls alone (0 = do not set).
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "iptables": {"masqueradeAll": False, "localhostNodePorts": False, "syncPeriod": "30s"},
    }


def corefile(kubeconfig: Path) -> str:
    # The cluster's zones from the API server; every other name gets NXDOMAIN: there is no
    # `forward`, so no upstream.
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 ip6.arpa:53 {{
    bind {NODE_IP}
    errors
    ready 127.0.0.1:{DNS_READY}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} sleuth
        pods insecure
        ttl 5
    }}
    cache 5
}}
.:53 {{
    bind {NODE_IP}
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""


def dns_objects() -> dict[str, Any]:
    """CoreDNS's RBAC, and the kube-dns Service whose one endpoint is CoreDNS on the bridge."""
    ports = [
        {"name": "dns", "port": 53, "protocol": "UDP"},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
    ]
    labels = {"app.kubernetes.io/managed-by": NODE_NAME}
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "sleuth-node:coredns", "labels": labels},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["endpoints", "services", "pods", "namespaces"],
                        "verbs": ["list", "watch"],
                    },
                    {
                        "apiGroups": ["discovery.k8s.io"],
                        "resources": ["endpointslices"],
                        "verbs": ["list", "watch"],
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "sleuth-node:coredns", "labels": labels},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "sleuth-node:coredns",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "sleuth-node:coredns",
                    }
                ],
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kube-dns",
                    "namespace": "kube-system",
                    "labels": {**labels, "k8s-app": "kube-dns"},
                },
                "spec": {
                    "clusterIP": DNS_SERVICE_IP,
                    "ports": [{**p, "targetPort": 53} for p in ports],
                },
            },
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "kube-dns-sleuth-node",
                    "namespace": "kube-system",
                    "labels": {
                        **labels,
                        "kubernetes.io/service-name": "kube-dns",
                        "endpointslice.kubernetes.io/managed-by": "sleuth-node",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [
                    {"addresses": [NODE_IP], "conditions": {"ready": True}, "nodeName": NODE_NAME}
                ],
                "ports": ports,
            },
        ],
    }


# ---------------------------------------------------------------------------------------------
# up / down


def require() -> None:
    if os.geteuid() != 0:
        raise SystemExit("node.py: the real node needs root (network, mounts, cgroups)")
    missing = [
        str(BIN / b)
        for b in ("kubelet", "kube-proxy", "coredns", "kubectl")
        if not (BIN / b).exists()
    ]
    missing += [
        b
        for b in (
            "containerd",
            "ctr",
            "runc",
            "containerd-shim-runc-v2",
            "iptables",
            "conntrack",
            "openssl",
            "ip",
            "go",
        )
        if not shutil.which(b)
    ]
    missing += [
        p
        for p in (
            "/usr/lib/cni/bridge",
            "/usr/lib/cni/host-local",
            "/usr/lib/cni/loopback",
            "/usr/lib/cni/portmap",
        )
        if not Path(p).exists()
    ]
    if missing:
        raise SystemExit(
            "node.py: missing "
            + ", ".join(missing)
            + " (tests/cluster/build.sh; make node-packages)"
        )


def kubectl(
    kubeconfig: str | Path,
    *args: str,
    input: str | None = None,
    check: bool = True,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return run(
        BIN / "kubectl",
        "--kubeconfig",
        kubeconfig,
        *args,
        input=input,
        check=check,
        timeout=timeout,
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


def down() -> list[str]:
    """Undo everything `up` did (safe to run twice, or after a failed `up`); return problems."""
    problems: list[str] = []
    state = load_state()
    procs: dict[str, Any] = state.get("procs", {})
    if "kubelet" in procs:
        stop(procs["kubelet"], "kubelet")
    if "containerd" in procs and alive(procs["containerd"]) and (BIN / "crictl").exists():
        # Stop and remove every pod sandbox while containerd runs: the CNI DEL releases the IPs,
        # the veths and the network namespaces.
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
    if not problems:
        shutil.rmtree(RUN, ignore_errors=True)
    else:  # keep the state (and the saved sysctls) so a second `down` can finish the job
        log("down left problems:\n  " + "\n  ".join(problems))
    return problems


def leftovers(sysctls_before: dict[str, str | None] | None = None) -> list[str]:
    """What a `down` should have undone and did not (empty = the machine is clean)."""
    found = [f"process {pid}: {cmd}" for pid, cmd in node_processes()]
    found += [f"iptables chain/rule: {c}" for c in leftover_chains()]
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
    sub.add_parser("check-network", help="check the network rule; exit 1 if it does not hold")
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
    elif args.command == "sysctls":
        print(json.dumps(sysctl_snapshot(), indent=1))
    elif args.command == "check-network":
        bad = check_network_rule()
        print(json.dumps(bad, indent=1))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
