"""Pack a root filesystem folder as a one-layer OCI image archive (no Docker, no registry).

    python3 tests/cluster/oci.py pack ROOTFS_DIR --ref NAME:TAG -o out.tar \\
        [--entrypoint '["/bin/app", "serve"]'] [--cmd '["--port", "80"]'] \\
        [--user UID[:GID]] [--env KEY=VALUE ...] [--workdir DIR] [--label KEY=VALUE ...] [--gzip]

``--entrypoint`` and ``--cmd`` take a JSON array, or one argument per repeated flag
(``--entrypoint /bin/app --entrypoint serve``). ``--env`` replaces the default
``PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin``, so give PATH too.

Then, on the real node (tests/cluster/node.sh):

    ctr --address /run/sleuth-node/containerd/containerd.sock -n k8s.io images import out.tar

and use the image in a pod with ``imagePullPolicy: Never`` (or ``IfNotPresent``).

The archive is an OCI image layout: ``oci-layout``, ``index.json`` and ``blobs/sha256/`` holding
the layer tar, the image config and the manifest, each named by its sha256. ``index.json``
carries the name both as ``org.opencontainers.image.ref.name`` (the tag) and as containerd's
``io.containerd.image.name`` (the full, normalised reference: ``probe:1`` becomes
``docker.io/library/probe:1``, the name kubelet asks containerd for), so ``ctr images import``
needs no extra flags.

Deterministic: the same folder gives the same bytes — entries sorted by path, every mtime set to
``--mtime`` (default 0, or ``SOURCE_DATE_EPOCH``), owners kept as numeric uid/gid with no user or
group names, hard links kept as links, sockets skipped, gzip (``--gzip``) without a timestamp.
The layer is written to a temporary file while hashed, so a large rootfs does not sit in memory.
Standard library only; ``--print-digest`` prints the manifest digest (the image's identity).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
CHUNK = 1 << 20


def normalize_ref(ref: str) -> str:
    """Docker's reference normalisation: ``probe:1`` -> ``docker.io/library/probe:1``."""
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:  # no tag (the colon belonged to a registry port)
        name, tag = ref, "latest"
    first, _, rest = name.partition("/")
    if not rest:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    return f"{name}:{tag}"


def _walk(root: Path) -> Iterator[Path]:
    """Every path under root (root itself excluded), parents before children, sorted by name."""
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        path = Path(entry.path)
        yield path
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(path)


class _HashingWriter(io.RawIOBase):
    """A write-only file that hashes and counts what goes through it into another file."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.sha = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.sha.update(view)
        self.out.write(view)
        self.size += len(view)
        return len(view)


def write_layer(rootfs: Path, out: IO[bytes], *, mtime: int) -> str:
    """Write rootfs as a tar stream to out; return the diff ID (sha256 of the tar)."""
    hasher = _HashingWriter(out)
    seen: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=hasher, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(rootfs):
            st = path.lstat()
            if stat.S_ISSOCK(st.st_mode):
                continue
            name = path.relative_to(rootfs).as_posix()
            info = tarfile.TarInfo(name)
            info.mode = stat.S_IMODE(st.st_mode)
            info.uid, info.gid = st.st_uid, st.st_gid
            info.uname = info.gname = ""
            info.mtime = mtime
            key = (st.st_dev, st.st_ino)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1 and key in seen:
                info.type, info.linkname = tarfile.LNKTYPE, seen[key]
                tar.addfile(info)
                continue
            if stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1:
                    seen[key] = name
                info.type, info.size = tarfile.REGTYPE, st.st_size
                with path.open("rb") as f:
                    tar.addfile(info, f)
                continue
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type, info.linkname = tarfile.SYMTYPE, os.readlink(path)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                info.type = tarfile.CHRTYPE if stat.S_ISCHR(st.st_mode) else tarfile.BLKTYPE
                info.devmajor, info.devminor = os.major(st.st_rdev), os.minor(st.st_rdev)
            elif stat.S_ISFIFO(st.st_mode):
                info.type = tarfile.FIFOTYPE
            else:
                continue
            tar.addfile(info)
    return "sha256:" + hasher.sha.hexdigest()


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, mtime
    tar.addfile(info, io.BytesIO(data))


def pack(
    rootfs: Path,
    output: Path,
    *,
    ref: str,
    entrypoint: list[str] | None = None,
    cmd: list[str] | None = None,
    user: str = "",
    env: list[str] | None = None,
    workdir: str = "",
    labels: dict[str, str] | None = None,
    compress: bool = False,
    mtime: int = 0,
) -> str:
    """Write the OCI archive; return the manifest digest."""
    if not rootfs.is_dir():
        raise SystemExit(f"oci.py: {rootfs} is not a folder")
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=".oci-") as tmp:
        layer_path = Path(tmp) / "layer"
        with layer_path.open("wb") as raw:
            if compress:
                with tempfile.TemporaryFile(dir=tmp) as plain:
                    diff_id = write_layer(rootfs, plain, mtime=mtime)
                    plain.seek(0)
                    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                        while chunk := plain.read(CHUNK):
                            gz.write(chunk)
                media = MEDIA_LAYER + "+gzip"
            else:
                diff_id = write_layer(rootfs, raw, mtime=mtime)
                media = MEDIA_LAYER
        sha = hashlib.sha256()
        with layer_path.open("rb") as f:
            while chunk := f.read(CHUNK):
                sha.update(chunk)
        layer_digest, layer_size = "sha256:" + sha.hexdigest(), layer_path.stat().st_size

        config: dict[str, Any] = {
            "Env": env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
        }
        if entrypoint:
            config["Entrypoint"] = entrypoint
        if cmd:
            config["Cmd"] = cmd
        if user:
            config["User"] = user
        if workdir:
            config["WorkingDir"] = workdir
        if labels:
            config["Labels"] = labels
        created = "1970-01-01T00:00:00Z" if mtime == 0 else _iso(mtime)
        image_config = {
            "architecture": "amd64",
            "os": "linux",
            "created": created,
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
            "history": [{"created": created, "created_by": "tests/cluster/oci.py pack"}],
        }
        config_digest, config_bytes = _blob(_json(image_config))
        manifest = {
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": {
                "mediaType": MEDIA_CONFIG,
                "digest": config_digest,
                "size": len(config_bytes),
            },
            "layers": [{"mediaType": media, "digest": layer_digest, "size": layer_size}],
        }
        manifest_digest, manifest_bytes = _blob(_json(manifest))
        full = normalize_ref(ref)
        index = {
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": [
                {
                    "mediaType": MEDIA_MANIFEST,
                    "digest": manifest_digest,
                    "size": len(manifest_bytes),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": full,
                        "org.opencontainers.image.ref.name": full.rpartition(":")[2],
                    },
                }
            ],
        }
        partial = output.with_name(output.name + ".partial")
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            _add_bytes(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}), mtime)
            _add_bytes(tar, "index.json", _json(index), mtime)
            for d in ("blobs", "blobs/sha256"):
                info = tarfile.TarInfo(d)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
                tar.addfile(info)
            for digest, data in ((config_digest, config_bytes), (manifest_digest, manifest_bytes)):
                _add_bytes(tar, f"blobs/sha256/{digest[7:]}", data, mtime)
            info = tarfile.TarInfo(f"blobs/sha256/{layer_digest[7:]}")
            info.size, info.mode, info.mtime = layer_size, 0o644, mtime
            with layer_path.open("rb") as f:
                tar.addfile(info, f)
        partial.replace(output)
    return manifest_digest


def _iso(epoch: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _argv(items: list[str]) -> list[str] | None:
    if len(items) == 1 and items[0].startswith("["):
        value = json.loads(items[0])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SystemExit("oci.py: --entrypoint/--cmd JSON must be an array of strings")
        return value
    return items or None


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"oci.py: {what} must be KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="pack ROOTFS_DIR as a one-layer OCI archive")
    p.add_argument("rootfs", type=Path)
    p.add_argument("--ref", required=True, help="image name, e.g. sleuth.local/probe:1")
    p.add_argument("-o", "--output", type=Path, required=True)
    p.add_argument(
        "--entrypoint",
        action="append",
        default=[],
        help='a JSON array (\'["/probe", "serve"]\') or one argument per --entrypoint',
    )
    p.add_argument("--cmd", action="append", default=[], help="like --entrypoint")
    p.add_argument("--user", default="", help="UID[:GID] (or a name present in the rootfs)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        help="KEY=VALUE (repeatable; replaces the default PATH)",
    )
    p.add_argument("--workdir", default="")
    p.add_argument("--label", action="append", default=[], help="KEY=VALUE (repeatable)")
    p.add_argument("--gzip", action="store_true", help="gzip the layer (smaller, slower)")
    p.add_argument("--mtime", type=int, default=int(os.environ.get("SOURCE_DATE_EPOCH", "0")))
    p.add_argument("--print-digest", action="store_true", help="print the manifest digest")
    args = parser.parse_args(argv)
    _pairs(args.env, "--env")
    digest = pack(
        args.rootfs,
        args.output,
        ref=args.ref,
        entrypoint=_argv(args.entrypoint),
        cmd=_argv(args.cmd),
        user=args.user,
        env=args.env or None,
        workdir=args.workdir,
        labels=_pairs(args.label, "--label") or None,
        compress=args.gzip,
        mtime=args.mtime,
    )
    if args.print_digest:
        print(digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
