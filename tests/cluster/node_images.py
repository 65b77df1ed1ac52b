"""The real node's own images: the pause (sandbox) image and the probe test image.

Both are static Go programs of ours (tests/cluster/images/, CGO off, no dependencies), packed by
oci.py as one-layer OCI archives with a minimal /etc/passwd and /etc/group (root and nonroot,
uid 65532) and /tmp, cached under <SLEUTH_CACHE>/images/ by a hash of their sources, oci.py and
the Go version, and imported into the node's containerd by ``ctr -n k8s.io images import``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from node_config import CACHE, CONTAINERD_SOCK, HERE, NONROOT
from node_host import log, run


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
