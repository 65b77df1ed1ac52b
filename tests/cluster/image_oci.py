"""One-layer OCI image archives from a root filesystem, without Docker or a registry (stdlib only).

    python3 tests/cluster/image_oci.py pack ROOTFS --ref NAME:TAG --config CONFIG.json --out X.tar
    python3 tests/cluster/image_oci.py check X.tar              # verify; print a JSON summary
    python3 tests/cluster/image_oci.py ref X.tar                # the image name in its index

``pack`` writes an OCI image layout (``oci-layout``, ``index.json``, the manifest, the config and
one layer, each blob named by its sha256) as one tar, which ``ctr -n k8s.io images import`` reads;
the index names the image ``NAME:TAG`` (``io.containerd.image.name`` and
``org.opencontainers.image.ref.name``). The layer is deterministic: entries sorted by path, every
mtime set to ``--epoch`` (default ``$SOURCE_DATE_EPOCH`` or 0), numeric owners with no names, no
device nodes (the runtime mounts /dev). The layer is streamed into the archive once while it is
hashed (gzip on request), so a 1 GB rootfs is not copied twice.

``--config`` is the image config's ``config`` section (User, Env, Entrypoint, Cmd, WorkingDir,
Labels) as JSON; image_recipe.py writes the one tests/cluster/image.env declares.

This file is the builder's own packer; tests/cluster/oci.py (the node's) may replace it later.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import stat
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = {
    "none": "application/vnd.oci.image.layer.v1.tar",
    "gzip": "application/vnd.oci.image.layer.v1.tar+gzip",
}
BLOCK = tarfile.BLOCKSIZE


# ---- writing --------------------------------------------------------------------------------


class _Digesting:
    """A write-only stream that hashes and counts what goes through it to ``sink``."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.sha.update(data)
        self.size += len(data)
        self.sink.write(data)
        return len(data)

    def flush(self) -> None:
        self.sink.flush()

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha.hexdigest()


def _walk(root: Path) -> Iterator[Path]:
    """Every path under ``root``, sorted by its bytes at each level, directories before contents."""
    names = sorted(os.listdir(root), key=os.fsencode)
    for name in names:
        path = root / name
        yield path
        if path.is_dir() and not path.is_symlink():
            yield from _walk(path)


def write_layer(root: Path, out: IO[bytes], epoch: int) -> None:
    """A deterministic tar of ``root``'s contents (paths relative, no leading ``./``)."""
    links: dict[tuple[int, int], str] = {}
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for path in _walk(root):
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            info = tarfile.TarInfo(rel)
            info.mode = stat.S_IMODE(st.st_mode)
            info.uid, info.gid = st.st_uid, st.st_gid
            info.uname = info.gname = ""
            info.mtime = epoch
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in links:
                    info.type = tarfile.LNKTYPE
                    info.linkname = links[key]
                else:
                    links[key] = rel
                    info.size = st.st_size
                    with path.open("rb") as f:
                        tar.addfile(info, f)
                    continue
            else:  # device nodes, fifos, sockets: the runtime provides /dev
                continue
            tar.addfile(info)


def _tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def _add_bytes(archive: IO[bytes], name: str, data: bytes) -> None:
    archive.write(_tar_header(name, len(data)))
    archive.write(data)
    archive.write(b"\0" * (-len(data) % BLOCK))


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


@dataclass
class Packed:
    ref: str
    manifest: str
    config: str
    layer: str
    diff_id: str
    layer_size: int


def pack(
    root: Path,
    ref: str,
    config: dict[str, Any],
    out: Path,
    *,
    epoch: int = 0,
    compress: str = "none",
) -> Packed:
    """Write the archive ``out``; the layer goes in once, its header patched after hashing."""
    if compress not in MEDIA_LAYER:
        raise ValueError(f"compress: one of {sorted(MEDIA_LAYER)}")
    with out.open("wb") as archive:
        _add_bytes(archive, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        header_at = archive.tell()
        archive.write(b"\0" * BLOCK)  # the layer blob's header, written once its digest is known
        blob = _Digesting(archive)
        if compress == "gzip":
            with gzip.GzipFile(fileobj=blob, mode="wb", compresslevel=1, mtime=0) as gz:  # type: ignore[arg-type]
                raw = _Digesting(gz)  # type: ignore[arg-type]
                write_layer(root, raw, epoch)  # type: ignore[arg-type]
        else:
            raw = blob
            write_layer(root, blob, epoch)  # type: ignore[arg-type]
        diff_id = raw.digest
        archive.write(b"\0" * (-blob.size % BLOCK))
        end = archive.tell()
        archive.seek(header_at)
        archive.write(_tar_header(f"blobs/sha256/{blob.sha.hexdigest()}", blob.size))
        archive.seek(end)

        image_config = _json(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": "1970-01-01T00:00:00Z",
                "config": config,
                "rootfs": {"type": "layers", "diff_ids": [diff_id]},
                "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "image.sh"}],
            }
        )
        config_digest = "sha256:" + hashlib.sha256(image_config).hexdigest()
        _add_bytes(archive, f"blobs/sha256/{config_digest[7:]}", image_config)
        manifest = _json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": {
                    "mediaType": MEDIA_CONFIG,
                    "digest": config_digest,
                    "size": len(image_config),
                },
                "layers": [
                    {"mediaType": MEDIA_LAYER[compress], "digest": blob.digest, "size": blob.size}
                ],
            }
        )
        manifest_digest = "sha256:" + hashlib.sha256(manifest).hexdigest()
        _add_bytes(archive, f"blobs/sha256/{manifest_digest[7:]}", manifest)
        index = _json(
            {
                "schemaVersion": 2,
                "mediaType": MEDIA_INDEX,
                "manifests": [
                    {
                        "mediaType": MEDIA_MANIFEST,
                        "digest": manifest_digest,
                        "size": len(manifest),
                        "platform": {"architecture": "amd64", "os": "linux"},
                        "annotations": {
                            "io.containerd.image.name": ref,
                            "org.opencontainers.image.ref.name": ref,
                        },
                    }
                ],
            }
        )
        _add_bytes(archive, "index.json", index)
        archive.write(b"\0" * (2 * BLOCK))  # end of archive
    return Packed(ref, manifest_digest, config_digest, blob.digest, diff_id, blob.size)


# ---- reading --------------------------------------------------------------------------------


@dataclass
class Archive:
    """A checked archive: its ref, manifest, image config, the layer's members, and the contents
    of the layer files :func:`check` was asked to keep."""

    ref: str
    manifest: dict[str, Any]
    config: dict[str, Any]
    layer_members: dict[str, tarfile.TarInfo]
    files: dict[str, bytes]


class _HashingReader:
    """A read-only stream that hashes what is read through it."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.sha = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data = self.source.read(n)
        self.sha.update(data)
        self.size += len(data)
        return data

    def drain(self) -> None:
        while self.read(1 << 20):
            pass

    @property
    def digest(self) -> str:
        return "sha256:" + self.sha.hexdigest()


def check(path: Path, keep: tuple[str, ...] = ("etc/passwd", "etc/group")) -> Archive:
    """Verify an archive: layout, every blob's digest and size, the layer's diff_id — reading the
    layer once — and keep the contents of the layer files named in ``keep``."""
    with tarfile.open(path) as outer:
        members = {m.name: m for m in outer.getmembers()}

        def open_blob(desc: dict[str, Any]) -> IO[bytes]:
            member = members[f"blobs/sha256/{desc['digest'].removeprefix('sha256:')}"]
            f = outer.extractfile(member)
            assert f is not None
            return f

        def blob(desc: dict[str, Any]) -> bytes:
            data = open_blob(desc).read()
            got = "sha256:" + hashlib.sha256(data).hexdigest()
            if got != desc["digest"] or len(data) != desc["size"]:
                raise ValueError(f"blob: digest {got}, size {len(data)} vs {desc}")
            return data

        def small(name: str) -> Any:
            f = outer.extractfile(members[name])
            assert f is not None
            return json.loads(f.read())

        if small("oci-layout") != {"imageLayoutVersion": "1.0.0"}:
            raise ValueError(f"oci-layout: {small('oci-layout')}")
        (entry,) = small("index.json")["manifests"]
        manifest = json.loads(blob(entry))
        config = json.loads(blob(manifest["config"]))
        (layer,) = manifest["layers"]
        compressed = _HashingReader(open_blob(layer))
        gzipped = layer["mediaType"].endswith("+gzip")
        raw = _HashingReader(gzip.GzipFile(fileobj=compressed) if gzipped else compressed)  # type: ignore[arg-type]
        layer_members: dict[str, tarfile.TarInfo] = {}
        files: dict[str, bytes] = {}
        try:
            with tarfile.open(fileobj=raw, mode="r|") as tar:  # type: ignore[call-overload]
                for info in tar:
                    layer_members[info.name] = info
                    if info.name in keep and info.isfile():
                        data = tar.extractfile(info)
                        assert data is not None
                        files[info.name] = data.read()
        except (tarfile.TarError, OSError, EOFError) as err:
            raise ValueError(f"layer: not a readable tar: {err}") from err
        raw.drain()
        if gzipped:
            compressed.drain()
        if (compressed.digest, compressed.size) != (layer["digest"], layer["size"]):
            got = f"digest {compressed.digest}, size {compressed.size}"
            raise ValueError(f"layer: {got} vs {layer}")
        if [raw.digest] != config["rootfs"]["diff_ids"]:
            raise ValueError(f"layer diff_id {raw.digest} vs {config['rootfs']['diff_ids']}")
    ref = entry["annotations"]["io.containerd.image.name"]
    return Archive(ref, manifest, config, layer_members, files)


# ---- command line ---------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="pack ROOTFS into a one-layer OCI archive")
    p.add_argument("rootfs", type=Path)
    p.add_argument("--ref", required=True, help="the image name, e.g. sleuth.local/sleuth:abc")
    p.add_argument("--config", required=True, type=Path, help="JSON: the config section")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--epoch", type=int, default=int(os.environ.get("SOURCE_DATE_EPOCH", "0")))
    p.add_argument("--compress", choices=sorted(MEDIA_LAYER), default="none")
    p = sub.add_parser("check", help="verify an archive; print its ref, config and layer size")
    p.add_argument("archive", type=Path)
    p = sub.add_parser("ref", help="print an archive's image name (reads index.json only)")
    p.add_argument("archive", type=Path)
    args = parser.parse_args(argv)

    if args.command == "ref":
        with tarfile.open(args.archive) as outer:
            f = outer.extractfile("index.json")
            assert f is not None
            (entry,) = json.load(f)["manifests"]
        print(entry["annotations"]["io.containerd.image.name"])
        return 0

    if args.command == "pack":
        config = json.loads(args.config.read_text())
        packed = pack(
            args.rootfs, args.ref, config, args.out, epoch=args.epoch, compress=args.compress
        )
        json.dump(packed.__dict__, sys.stdout, indent=2)
        print()
    else:
        archive = check(args.archive)
        summary = {
            "ref": archive.ref,
            "manifest": archive.manifest,
            "config": archive.config["config"],
            "layer_entries": len(archive.layer_members),
        }
        json.dump(summary, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
