"""NetworkPolicy enforcement on the real node: SIG Network's kube-network-policies (test-only).

    tests/cluster/node.sh netpol up      # start the enforcer on the running node
    tests/cluster/node.sh netpol down    # stop it and remove its rules and tables
    tests/cluster/node.sh netpol status  # JSON: pid, queue bound, divert rules, its nft table

kube-network-policies (v0.8.0, built by tests/cluster/build.sh) decides in user space: the
kernel hands it the first packet of each new connection through an NFQUEUE, it evaluates the
cluster's NetworkPolicies for the source and destination pods (from its informers) and answers
accept or drop; conntrack lets the rest of an accepted connection through.

**What this kernel lacks, and what we do instead.** The engine installs its divert rules as an
nftables table ``inet kube-network-policies`` whose rules end in nftables' own ``queue``
statement — and this kernel has no CONFIG_NFT_QUEUE, so that whole batch is refused (the table
never exists; its log says ``syncing nftables rules ... error``). The engine's verdict loop reads
its queue regardless. So ``up`` installs the same divert rules with iptables, whose NFQUEUE
target this kernel has (``-j NFQUEUE`` through nft_compat), in chain :data:`CHAIN` of the mangle
table's POSTROUTING (after the node's guard): accept what a root process of the node sent (the
engine's ``meta skuid 0 accept``: kubelet's probes), accept established and related packets,
queue every other packet from or to the pod CIDR to queue :data:`QUEUE` without a bypass flag
(the engine's fail-closed default: with no reader the packet is dropped). The engine runs with
``--netfilter-bug-1766-fix=false`` (DNS is handled in the same chain; the kernel here has the
conntrack fix that workaround is for), ``--disable-nri`` and ``--fail-open=false``.

Differences from the engine's own rules: it queues only pods some NetworkPolicy selects (an nft
set it keeps), these rules queue the whole pod CIDR (the engine accepts packets of pods no
policy selects, so verdicts are the same; more packets reach user space); IPv6 is not
diverted (the node is IPv4 only); and packets from the pods to the node itself are diverted too,
from chain :data:`INPUT_CHAIN` of the mangle table's INPUT (established and related ones pass,
every other packet that arrives on the bridge from a pod goes to the same queue). The engine
hooks only postrouting, which a packet delivered to the node never reaches: on this one machine
the API server (and CoreDNS) listen on the node's own address, where a real cluster's API server
is another machine, reached through the postrouting path. Without it no policy could refuse a
pod's connection to the API server, and a test of the agents' API server rule could not fail.

The engine reads the API with an in-cluster configuration only (a ServiceAccount token at
/var/run/secrets/kubernetes.io/serviceaccount). It runs on the host as a node process, in a
private mount namespace (``unshare``) that mounts a tmpfs over /run and writes a token of its
ServiceAccount (``kube-system/kube-network-policies``, with list/watch on pods, namespaces and
NetworkPolicies) there: nothing is written to the host's /run. ``down`` (and node.py's own
``down``) removes the divert chain first, then stops the engine, then deletes its nft table if
one exists; ``leftovers`` reports any of them left.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from node_config import BIN, BRIDGE, CLUSTER_CIDR, LOGS, NODE_NAME, RUN
from node_host import (
    alive,
    check_alive,
    kubeconfig_info,
    kubectl,
    load_state,
    log,
    run,
    save_state,
    spawn,
    stop,
    wait_for,
)

NAME = "kube-network-policies"
CHAIN = "SLEUTH-NETPOL"
INPUT_CHAIN = "SLEUTH-NETPOL-IN"
QUEUE = 100
NFT_TABLE = ("inet", NAME)
TOKEN_DIR = RUN / "netpol"
NAMESPACE = "kube-system"
QUEUE_STATS = Path("/proc/net/netfilter/nfnetlink_queue")


def rbac_objects() -> dict[str, Any]:
    """The engine's ServiceAccount and what it may read (as its own chart grants)."""
    meta = {"name": NAME, "labels": {"sleuth.dev/real-node": "true"}}
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {**meta, "namespace": NAMESPACE},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": meta,
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["pods", "namespaces"],
                        "verbs": ["list", "watch"],
                    },
                    {
                        "apiGroups": ["networking.k8s.io"],
                        "resources": ["networkpolicies"],
                        "verbs": ["list", "watch"],
                    },
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": meta,
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": NAME,
                },
                "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}],
            },
        ],
    }


def queue_bound() -> bool:
    """Whether a process reads queue :data:`QUEUE` (the kernel's nfnetlink_queue table)."""
    try:
        lines = QUEUE_STATS.read_text().splitlines()
    except OSError:
        return False
    return any(line.split()[:1] == [str(QUEUE)] for line in lines)


def divert_rules() -> list[list[str]]:
    """The rules of :data:`CHAIN` (see the module docstring), in order."""
    return [
        ["-m", "owner", "--uid-owner", "0", "-j", "RETURN"],
        ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
        ["-s", CLUSTER_CIDR, "-j", "NFQUEUE", "--queue-num", str(QUEUE)],
        ["-d", CLUSTER_CIDR, "-j", "NFQUEUE", "--queue-num", str(QUEUE)],
    ]


def input_divert_rules() -> list[list[str]]:
    """The rules of :data:`INPUT_CHAIN`: new connections from a pod to the node itself."""
    return [
        ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
        ["-i", BRIDGE, "-s", CLUSTER_CIDR, "-j", "NFQUEUE", "--queue-num", str(QUEUE)],
    ]


# (the mangle table's built-in chain, our chain, its rules)
DIVERTS = (("POSTROUTING", CHAIN, divert_rules), ("INPUT", INPUT_CHAIN, input_divert_rules))


def _ipt(*args: str, check: bool = True) -> Any:
    return run("iptables", "-w", "-t", "mangle", *args, check=check)


def add_divert() -> None:
    for hook, chain, rules in DIVERTS:
        _ipt("-N", chain, check=False)
        _ipt("-F", chain)
        for rule in rules():
            _ipt("-A", chain, *rule)
        if _ipt("-C", hook, "-j", chain, check=False).returncode:
            _ipt("-A", hook, "-j", chain)


def remove_divert() -> None:
    if not shutil.which("iptables"):
        return
    for hook, chain, _rules in DIVERTS:
        while _ipt("-C", hook, "-j", chain, check=False).returncode == 0:
            _ipt("-D", hook, "-j", chain)
        _ipt("-F", chain, check=False)
        _ipt("-X", chain, check=False)


def nft_table_exists() -> bool | None:
    """Whether the engine's nft table exists (None: no ``nft`` to ask)."""
    if not shutil.which("nft"):
        return None
    return run("nft", "list", "table", *NFT_TABLE, check=False).returncode == 0


def delete_nft_table() -> None:
    if nft_table_exists():
        run("nft", "delete", "table", *NFT_TABLE, check=False)


def _command(kubeconfig: str) -> list[str]:
    server = urlsplit(kubeconfig_info(Path(kubeconfig))["server"])
    engine = [
        str(BIN / NAME),
        f"--hostname-override={NODE_NAME}",
        f"--nfqueue-id={QUEUE}",
        "--fail-open=false",
        "--disable-nri",
        "--netfilter-bug-1766-fix=false",
        "--metrics-bind-address=127.0.0.1:0",
        "--v=2",
    ]
    script = (
        't=$(cat "$0/token"); c=$(cat "$0/ca.crt"); '
        "mount -t tmpfs -o size=1m,mode=0755 sleuth-netpol /run && "
        "d=/run/secrets/kubernetes.io/serviceaccount && mkdir -p $d && "
        'printf "%s" "$t" > $d/token && printf "%s\\n" "$c" > $d/ca.crt && '
        f"export KUBERNETES_SERVICE_HOST={server.hostname} "
        f"KUBERNETES_SERVICE_PORT={server.port or 443} && "
        'exec "$@"'
    )
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        str(TOKEN_DIR),
        *engine,
    ]


def up() -> dict[str, Any]:
    """Start the engine on the running node, then divert pod traffic to it."""
    state = load_state()
    if not state.get("ready"):
        raise SystemExit("node_netpol: the real node is not up (tests/cluster/up.sh --real-node)")
    if not (BIN / NAME).exists():
        raise SystemExit(f"node_netpol: {BIN / NAME} missing (tests/cluster/build.sh)")
    proc = state.get("procs", {}).get(NAME)
    if proc and alive(proc):
        return status()
    kubeconfig = str(state["kubeconfig"])
    t0 = time.monotonic()
    kubectl(kubeconfig, "apply", "-f", "-", input=json.dumps(rbac_objects()))
    token = kubectl(
        kubeconfig, "create", "token", NAME, "-n", NAMESPACE, "--duration=24h"
    ).stdout.strip()
    TOKEN_DIR.mkdir(parents=True, exist_ok=True)
    (TOKEN_DIR / "token").write_text(token)
    (TOKEN_DIR / "token").chmod(0o600)
    shutil.copy(kubeconfig_info(Path(kubeconfig))["ca"], TOKEN_DIR / "ca.crt")
    spawn(state, NAME, _command(kubeconfig))
    wait_for(
        f"{NAME} reading queue {QUEUE}",
        lambda: check_alive(state, NAME) and queue_bound(),
        120,
    )
    add_divert()
    state["netpol"] = {"started_s": round(time.monotonic() - t0, 1)}
    save_state(state)
    log(f"{NAME} enforcing NetworkPolicies (queue {QUEUE}, chain {CHAIN})")
    return status()


def down(problems: list[str] | None = None) -> list[str]:
    """Remove the divert rules, stop the engine, delete its nft table and its API objects."""
    problems = [] if problems is None else problems
    remove_divert()
    state = load_state()
    proc = state.get("procs", {}).get(NAME)
    if proc:
        stop(proc, NAME)
        state["procs"].pop(NAME, None)
        state.pop("netpol", None)
        save_state(state)
    delete_nft_table()
    shutil.rmtree(TOKEN_DIR, ignore_errors=True)
    kubeconfig = state.get("kubeconfig")
    if proc and kubeconfig and Path(kubeconfig).exists():
        kubectl(
            kubeconfig,
            "delete",
            "-f",
            "-",
            "--ignore-not-found",
            "--wait=false",
            input=json.dumps(rbac_objects()),
            check=False,
            timeout=30,
        )
    problems += leftovers()
    return problems


def leftovers() -> list[str]:
    found = []
    for _hook, chain, _rules in DIVERTS:
        if (
            shutil.which("iptables")
            and run("iptables", "-w", "-t", "mangle", "-S", chain, check=False).returncode == 0
        ):
            found.append(f"iptables -t mangle chain {chain}")
    if nft_table_exists():
        found.append(f"nft table {' '.join(NFT_TABLE)}")
    if queue_bound():
        found.append(f"a reader of NFQUEUE {QUEUE}")
    return found


def status() -> dict[str, Any]:
    state = load_state()
    proc = state.get("procs", {}).get(NAME)
    engine_log = ""
    if (LOGS / f"{NAME}.log").exists():
        engine_log = (LOGS / f"{NAME}.log").read_text(errors="replace")
    return {
        "running": bool(proc and alive(proc)),
        "pid": proc.get("pid") if proc else None,
        "queue": QUEUE,
        "queue_bound": queue_bound(),
        "divert_chain": run(
            "iptables", "-w", "-t", "mangle", "-S", CHAIN, check=False
        ).stdout.splitlines(),
        "input_divert_chain": run(
            "iptables", "-w", "-t", "mangle", "-S", INPUT_CHAIN, check=False
        ).stdout.splitlines(),
        "nft_table": nft_table_exists(),
        # The engine's own nftables rules, refused by this kernel (no nft queue statement).
        "nft_sync_refused": '"syncing nftables rules" error=' in engine_log,
        # The engine's verdicts on queued packets (its --v=2 log lines).
        "verdicts": {v: engine_log.count(f'verdict="{v}"') for v in ("accept", "drop")},
        "timings": state.get("netpol", {}),
    }


__all__ = ["CHAIN", "INPUT_CHAIN", "NAME", "QUEUE", "down", "leftovers", "status", "up"]
