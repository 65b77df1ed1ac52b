"""The real node's host plumbing: processes by PID, sysctls, the bridge and the guard rules,
iptables chains, mounts, cgroups, certificates, and the pause/probe images. Used by node.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from node_config import (
    BIN,
    BRIDGE,
    CHAIN_PREFIXES,
    CLUSTER_CIDR,
    CONTAINERD_SOCK,
    DNS_SERVICE_IP,
    GUARD,
    KUBERNETES_SERVICE_IP,
    LOGS,
    NODE_GID,
    NODE_IP,
    RUN,
    SERVICE_CIDR,
    STATE,
    SYSCTL_SAVED,
    SYSCTLS,
)


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
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when it is gone or a zombie (dead, waiting for whoever adopted it to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


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
