"""oci.py packs a folder as a deterministic one-layer OCI image archive."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import oci
import pytest

pytestmark = pytest.mark.unit


def _rootfs(root: Path) -> Path:
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "passwd").write_text("nonroot:x:65532:65532::/:/sbin/nologin\n")
    (root / "app").write_bytes(b"\x7fELF not really")
    (root / "app").chmod(0o755)
    (root / "link").symlink_to("app")
    (root / "tmp").mkdir()
    (root / "tmp").chmod(0o1777)
    return root


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def test_pack_is_deterministic_and_a_valid_layout(tmp_path: Path) -> None:
    root = _rootfs(tmp_path / "rootfs")
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    digest = oci.pack(root, a, ref="probe:1", entrypoint=["/app", "serve"], user="65532:65532")
    (root / "app").touch()  # a new mtime changes nothing
    assert (
        oci.pack(root, b, ref="probe:1", entrypoint=["/app", "serve"], user="65532:65532") == digest
    )
    assert a.read_bytes() == b.read_bytes()

    files = _members(a)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"]["io.containerd.image.name"] == "docker.io/library/probe:1"
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == "1"
    manifest = json.loads(files[f"blobs/sha256/{digest[7:]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["config"]["Entrypoint"] == ["/app", "serve"]
    assert config["config"]["User"] == "65532:65532"
    layer_digest = manifest["layers"][0]["digest"]
    layer = tmp_path / "layer.tar"
    layer.write_bytes(files[f"blobs/sha256/{layer_digest[7:]}"])
    assert config["rootfs"]["diff_ids"] == [
        "sha256:" + hashlib.sha256(layer.read_bytes()).hexdigest()
    ]
    with tarfile.open(layer) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ["app", "etc", "etc/passwd", "link", "tmp"]
    assert all(m.mtime == 0 and m.uname == "" for m in members)
    assert {m.name: m.mode for m in members}["tmp"] == 0o1777
    assert {m.name: m.linkname for m in members}["link"] == "app"


def test_normalize_ref() -> None:
    assert oci.normalize_ref("probe:1") == "docker.io/library/probe:1"
    assert oci.normalize_ref("sleuth/probe:1") == "docker.io/sleuth/probe:1"
    assert oci.normalize_ref("sleuth.local/probe:v1") == "sleuth.local/probe:v1"
    assert oci.normalize_ref("localhost:5000/probe") == "localhost:5000/probe:latest"


def test_cli_takes_a_json_entrypoint(tmp_path: Path) -> None:
    root = _rootfs(tmp_path / "rootfs")
    out = tmp_path / "img.tar"
    argv = [
        "pack",
        str(root),
        "--ref",
        "x.local/y:1",
        "-o",
        str(out),
        "--entrypoint",
        '["/app", "-m", "x"]',
    ]
    argv += ["--env", "PATH=/bin", "--env", "HOME=/"]
    assert oci.main(argv) == 0
    files = _members(out)
    index = json.loads(files["index.json"])
    manifest = json.loads(files[f"blobs/sha256/{index['manifests'][0]['digest'][7:]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["config"]["Entrypoint"] == ["/app", "-m", "x"]
    assert config["config"]["Env"] == ["PATH=/bin", "HOME=/"]
