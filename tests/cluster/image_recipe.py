"""What an image is made of: the recipe, the distributions' files, the cache key (stdlib only).

    python3 tests/cluster/image_recipe.py config RECIPE     # the OCI config section, as JSON
    python3 tests/cluster/image_recipe.py files DIST        # NUL-separated, relative to DIST
    python3 tests/cluster/image_recipe.py key --lock L --dist D [--dist D2 ...] --builder F [...]

A *recipe* (tests/cluster/image.env) is a shell file of ``KEY='value'`` lines that both image.sh
(``source``) and :func:`read_recipe` read; its list and map values are JSON.

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
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

# The PATH a Debian base image starts with (Docker's default); a recipe's "$PATH" expands to it.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def read_recipe(path: Path) -> dict[str, str]:
    """``KEY='value'`` / ``KEY=value`` lines of a shell file (comments and blanks skipped)."""
    out: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line.strip())
        if not m:
            raise ValueError(f"{path}:{number}: not a KEY=value line: {line!r}")
        words = shlex.split(m.group(2), comments=True)
        if len(words) > 1:
            raise ValueError(f"{path}:{number}: quote the value: {line!r}")
        out[m.group(1)] = words[0] if words else ""
    return out


def recipe_config(recipe: dict[str, str]) -> dict[str, Any]:
    """The OCI image config's ``config`` section a recipe declares."""
    env = [e.replace("$PATH", DEFAULT_PATH) for e in json.loads(recipe["IMAGE_ENV"])]
    return {
        "User": recipe["IMAGE_USER"],
        "Env": env,
        "Entrypoint": json.loads(recipe["IMAGE_ENTRYPOINT"]),
        "Cmd": json.loads(recipe["IMAGE_CMD"]),
        "WorkingDir": recipe["IMAGE_WORKDIR"],
        "Labels": json.loads(recipe["IMAGE_LABELS"]),
    }


def dist_files(dist: Path) -> list[str]:
    """Tracked paths under ``dist`` (relative to it, sorted), nested distributions left out."""
    out = subprocess.run(
        ["git", "-C", str(dist), "ls-files", "-z", "--", "."],
        capture_output=True,
        check=True,
    ).stdout.decode()
    paths = sorted(p for p in out.split("\0") if p)
    top = PurePosixPath(".")
    nested = [
        PurePosixPath(p).parent
        for p in paths
        if PurePosixPath(p).name == "pyproject.toml" and PurePosixPath(p).parent != top
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


def _feed(sha: Any, label: str, data: bytes) -> None:
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
    p = sub.add_parser("config", help="the OCI config section a recipe declares, as JSON")
    p.add_argument("recipe", type=Path)
    p = sub.add_parser("files", help="the distribution's files, NUL-separated")
    p.add_argument("dist", type=Path)
    p = sub.add_parser("key", help="the image's cache key")
    p.add_argument("--lock", type=Path, required=True)
    p.add_argument("--dist", type=Path, action="append", required=True)
    p.add_argument("--builder", type=Path, action="append", default=[])
    args = parser.parse_args(argv)
    if args.command == "config":
        json.dump(recipe_config(read_recipe(args.recipe)), sys.stdout, indent=2)
        print()
    elif args.command == "files":
        sys.stdout.write("".join(f"{p}\0" for p in dist_files(args.dist)))
    else:
        print(key(args.lock, args.dist, args.builder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
