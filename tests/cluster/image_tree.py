"""What an image is made of, and the cache key that names it (stdlib only; image.sh calls this).

    python3 tests/cluster/image_tree.py files DIST          # NUL-separated paths, relative to DIST
    python3 tests/cluster/image_tree.py key --lock L --dist D [--dist D2 ...] --builder F [...]

A distribution's files are the ones git tracks under its folder (``git ls-files``, read from the
working tree, so uncommitted edits count and untracked files do not), minus every nested folder
that holds its own ``pyproject.toml`` (another distribution, listed on its own when wanted). The
same list is hashed for the key and copied into the build, so the two cannot disagree.

The key is the first 12 hex digits of a sha256 over the builder's files (script, packer, recipe),
the lock file, and each distribution's file list (path, kind, and content or symlink target),
in the order given.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path, PurePosixPath


def dist_files(dist: Path) -> list[str]:
    """Tracked paths under ``dist`` (relative to it, sorted), nested distributions left out."""
    out = subprocess.run(
        ["git", "-C", str(dist), "ls-files", "-z", "--", "."],
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = sorted(p for p in out.split("\0") if p)
    nested = [
        PurePosixPath(p).parent
        for p in paths
        if PurePosixPath(p).name == "pyproject.toml" and PurePosixPath(p).parent != PurePosixPath(".")
    ]
    keep = []
    for p in paths:
        pp = PurePosixPath(p)
        if any(n in pp.parents for n in nested):
            continue
        if not os.path.lexists(dist / p):  # deleted in the working tree, not yet committed
            continue
        keep.append(p)
    if "pyproject.toml" not in keep:
        raise SystemExit(f"{dist}: no tracked pyproject.toml; not a distribution folder")
    return keep


def _feed(sha: "hashlib._Hash", label: str, data: bytes) -> None:
    sha.update(f"{label}\0{len(data)}\0".encode())
    sha.update(data)


def key(lock: Path, dists: list[Path], builder: list[Path]) -> str:
    sha = hashlib.sha256()
    for f in builder:
        _feed(sha, f"builder {f.name}", f.read_bytes())
    _feed(sha, "lock", lock.read_bytes())
    for dist in dists:
        prefix = subprocess.run(
            ["git", "-C", str(dist), "rev-parse", "--show-prefix"],
            capture_output=True,
            check=True,
        ).stdout.strip()
        _feed(sha, "dist", prefix or b".")  # the folder inside the repository, not on this disk
        for p in dist_files(dist):
            path = dist / p
            if path.is_symlink():
                _feed(sha, f"link {p}", os.readlink(path).encode())
            else:
                mode = "x" if os.access(path, os.X_OK) else "f"
                _feed(sha, f"file {mode} {p}", path.read_bytes())
    return sha.hexdigest()[:12]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("files", help="the distribution's files, NUL-separated")
    p.add_argument("dist", type=Path)
    p = sub.add_parser("key", help="the image's cache key")
    p.add_argument("--lock", type=Path, required=True)
    p.add_argument("--dist", type=Path, action="append", required=True)
    p.add_argument("--builder", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    if args.command == "files":
        sys.stdout.write("".join(f"{p}\0" for p in dist_files(args.dist)))
    else:
        print(key(args.lock, args.dist, args.builder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
