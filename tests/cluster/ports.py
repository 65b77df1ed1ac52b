"""Pinned, non-overlapping ports for every test cluster on this machine.

    python3 tests/cluster/ports.py claim NAME     # prints the base port of NAME's block
    python3 tests/cluster/ports.py release NAME

kwokctl picks free ports itself, but two clusters created at the same moment were given the same
ones. So up.sh claims a block of ports under a lock before it creates a cluster and pins each
component to one of them in the kwokctl configuration: base+0 etcd, +1 etcd peer,
+2 kube-apiserver, +3 kube-controller-manager, +4 kube-scheduler, +5 kwok-controller. Blocks of
10 from port 24000 (below the kernel's ephemeral range, 32768 and up); a claim is a file
``<SLEUTH_CACHE>/kwok/ports/<block>`` naming the cluster. A block is free when it has no file,
or its cluster's folder is gone and the claim is more than 10 minutes old (a killed run), and
each of its ports can be bound.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from pathlib import Path

BASE, BLOCK, BLOCKS, USED = 24000, 10, 200, 6
STALE_AFTER_S = 600
CACHE = Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))
DIR = CACHE / "kwok" / "ports"
CLUSTERS = CACHE / "kwok" / "clusters"


def _bindable(port: int) -> bool:
    for host in ("127.0.0.1", "0.0.0.0"):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


def _stale(claim: Path) -> bool:
    name = claim.read_text().strip()
    old = time.time() - claim.stat().st_mtime > STALE_AFTER_S
    return old and not (CLUSTERS / name).exists()


def claim(name: str) -> int:
    DIR.mkdir(parents=True, exist_ok=True)
    with (DIR / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for block in range(BLOCKS):
            f = DIR / str(block)
            if f.exists() and f.read_text().strip() == name:
                f.touch()
                return BASE + block * BLOCK
        for block in range(BLOCKS):
            f = DIR / str(block)
            base = BASE + block * BLOCK
            if f.exists() and not _stale(f):
                continue
            if all(_bindable(base + i) for i in range(USED)):
                f.write_text(name + "\n")
                return base
    raise SystemExit(f"ports.py: no free block of {USED} ports from {BASE}")


def release(name: str) -> None:
    if not DIR.exists():
        return
    with (DIR / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for f in DIR.iterdir():
            if f.name.isdigit() and f.read_text().strip() == name:
                f.unlink()


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("claim", "release"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "claim":
        print(claim(sys.argv[2]))
    else:
        release(sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
