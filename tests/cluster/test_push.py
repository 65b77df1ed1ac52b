"""push.py (what `make push` runs) against a real registry: the CNCF's distribution registry,
built from the Go module proxy (tests/cluster/build.sh registry), on loopback.

An archive packed like the images (oci.py) is pushed; the registry then serves the manifest by
tag and by the printed digest, byte for byte, and every blob under its digest. A registry that
asks for credentials refuses the push without them (the error says which variables to set) and
takes it with them, from the environment or a Docker config file; the password is never printed.
A registry with token auth gets its bearer token from a token service (a JWT the registry
verifies against the service's certificate).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import oci
import pytest

from sleuth.core.process import free_port, stop_process
from tests.support.paths import ROOT
from tests.support.polling import eventually

pytestmark = pytest.mark.integration

PUSH = ROOT / "tests" / "cluster" / "push.py"
ACCEPT = "application/vnd.oci.image.manifest.v1+json"


@dataclass
class Running:
    address: str
    log: Path


@pytest.fixture(scope="module")
def registry_bin() -> Path:
    build = subprocess.run(
        [str(ROOT / "tests" / "cluster" / "build.sh"), "registry"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return Path(build.stdout.strip().splitlines()[-1])


def _serve(
    bin_dir: Path, root: Path, htpasswd: Path | None = None, extra: str = ""
) -> Iterator[Running]:
    """The registry on a free loopback port; ``htpasswd``: basic auth; ``extra``: other YAML."""
    port = free_port()
    auth = f"auth:\n  htpasswd:\n    realm: sleuth-test\n    path: {htpasswd}\n" if htpasswd else ""
    auth += extra
    root.mkdir(parents=True, exist_ok=True)
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        "log:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n" + auth,
        encoding="utf-8",
    )
    log = root / "registry.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(bin_dir / "registry"), "serve", str(config)], stdout=out, stderr=out
        )

    def listening() -> bool:
        if proc.poll() is not None:  # fail now, not at the deadline
            raise RuntimeError("registry exited: " + log.read_text(errors="replace")[-2000:])
        # /v2/ answers 200, or 401 with auth on: any HTTP answer means it listens.
        httpx.get(f"http://127.0.0.1:{port}/v2/", timeout=2)
        return True

    try:
        eventually(listening, 60, "the registry listens", not_yet=(httpx.TransportError,))
        yield Running(f"127.0.0.1:{port}", log)
    finally:
        stop_process(proc)


@pytest.fixture
def registry(registry_bin: Path, tmp_path: Path) -> Iterator[Running]:
    yield from _serve(registry_bin, tmp_path / "open")


@pytest.fixture
def guarded(registry_bin: Path, tmp_path: Path) -> Iterator[Running]:
    root = tmp_path / "guarded"
    root.mkdir()
    line = subprocess.run(
        [str(registry_bin / "htpasswd"), "pusher"],
        input="s3cret-pw\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (root / "htpasswd").write_text(line, encoding="utf-8")
    yield from _serve(registry_bin, root, root / "htpasswd")


@pytest.fixture
def archive(tmp_path: Path) -> tuple[Path, str]:
    rootfs = tmp_path / "rootfs"
    (rootfs / "etc").mkdir(parents=True)
    (rootfs / "etc" / "passwd").write_text("sleuth:x:65532:65532::/tmp:/sbin/nologin\n")
    (rootfs / "app").write_bytes(os.urandom(300_000))  # a layer of a few hundred KB
    path = tmp_path / "probe.oci.tar"
    digest = oci.pack(rootfs, path, ref="sleuth.local/probe:1", entrypoint=["/app"], compress=True)
    return path, digest


def _push(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PUSH), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def _blobs(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {
            "sha256:" + m.name.rsplit("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar
            if m.isfile() and m.name.startswith("blobs/")
        }


def test_an_archive_pushed_is_served_by_tag_and_digest_byte_for_byte(
    registry: Running, archive: tuple[Path, str]
) -> None:
    path, digest = archive
    out = _push("--registry", f"{registry.address}/team", "--tag", "0.1.0", f"probe={path}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"{registry.address}/team/probe:0.1.0@{digest}"]
    blobs = _blobs(path)
    base = f"http://{registry.address}/v2/team/probe"
    by_tag = httpx.get(f"{base}/manifests/0.1.0", headers={"Accept": ACCEPT}, timeout=30)
    assert by_tag.status_code == 200
    assert by_tag.headers["Docker-Content-Digest"] == digest
    assert by_tag.content == blobs[digest]
    manifest = json.loads(by_tag.content)
    for blob in [manifest["config"], *manifest["layers"]]:
        got = httpx.get(f"{base}/blobs/{blob['digest']}", timeout=30, follow_redirects=True)
        assert got.status_code == 200
        assert "sha256:" + hashlib.sha256(got.content).hexdigest() == blob["digest"]
        assert len(got.content) == blob["size"]
    # Again, as another tag: the blobs are there already, the manifest is the same.
    again = _push("--registry", f"{registry.address}/team", "--tag", "stable", f"probe={path}")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().endswith(f"probe:stable@{digest}")


def test_a_registry_that_wants_credentials_gets_them_and_never_sees_them_printed(
    guarded: Running, archive: tuple[Path, str], tmp_path: Path
) -> None:
    path, digest = archive
    args = ("--registry", guarded.address, "--tag", "1", f"probe={path}")
    (tmp_path / "none.json").write_text('{"auths": {}}')  # no entry for this registry
    refused = _push(*args, "--auth-file", str(tmp_path / "none.json"))
    assert refused.returncode == 1
    assert "HTTP 401" in refused.stderr
    assert "REGISTRY_USERNAME/REGISTRY_PASSWORD" in refused.stderr
    wrong = _push(*args, env={"REGISTRY_USERNAME": "pusher", "REGISTRY_PASSWORD": "nope"})
    assert wrong.returncode == 1
    assert "nope" not in wrong.stdout + wrong.stderr
    ok = _push(*args, env={"REGISTRY_USERNAME": "pusher", "REGISTRY_PASSWORD": "s3cret-pw"})
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"{guarded.address}/probe:1@{digest}"
    assert "s3cret-pw" not in ok.stdout + ok.stderr
    # The same credentials from a Docker config file (what `docker login` writes).
    config = tmp_path / "docker" / "config.json"
    config.parent.mkdir()
    auth = base64.b64encode(b"pusher:s3cret-pw").decode()
    config.write_text(json.dumps({"auths": {guarded.address: {"auth": auth}}}))
    from_file = _push(*args, "--auth-file", str(config))
    assert from_file.returncode == 0, from_file.stderr


@pytest.mark.slow
def test_make_push_builds_both_images_and_pushes_them(registry: Running) -> None:
    """`make push REGISTRY=...` as the guide says: both images built (tests/cluster/image.sh,
    cached by their key) and pushed; each printed digest is the archive's own."""
    missing = make_push_missing()
    if missing:
        pytest.skip(f"image.sh needs {missing} (make node-packages)")
    out = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "push",
            f"REGISTRY={registry.address}/sleuth-dev",
            "TAG=t1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    pushed = [line for line in out.stdout.splitlines() if "@sha256:" in line]
    assert [p.split("@")[0] for p in pushed] == [
        f"{registry.address}/sleuth-dev/sleuth:t1",
        f"{registry.address}/sleuth-dev/sleuth-operator:t1",
    ]
    for line in pushed:
        ref, digest = line.split("@")
        name = ref.split("/")[-1].split(":")[0]
        got = httpx.get(
            f"http://{registry.address}/v2/sleuth-dev/{name}/manifests/{digest}",
            headers={"Accept": ACCEPT},
            timeout=30,
        )
        assert got.status_code == 200
        assert "sha256:" + hashlib.sha256(got.content).hexdigest() == digest


def make_push_missing() -> str:
    import shutil

    return " ".join(t for t in ("mmdebstrap", "unshare") if shutil.which(t) is None)


class TokenService:
    """A registry token service (the distribution spec's token protocol): HTTP basic in, a JWT
    out, signed by a key whose self-signed certificate the registry trusts (``x5c``)."""

    def __init__(self, root: Path, service: str) -> None:
        import datetime

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID

        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sleuth-test-token")])
        now = datetime.datetime.now(datetime.UTC)
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .sign(self.key, hashes.SHA256())
        )
        self.bundle = root / "token.pem"
        self.bundle.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        self.der = base64.b64encode(self.cert.public_bytes(serialization.Encoding.DER)).decode()
        self.service = service
        self.asked: list[str] = []

    def token(self, scope: str) -> str:
        import time
        import uuid

        import jwt

        kind, name, actions = scope.split(":")
        now = int(time.time())
        claims = {
            "iss": "sleuth-test-issuer",
            "sub": "pusher",
            "aud": self.service,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": uuid.uuid4().hex,
            "access": [{"type": kind, "name": name, "actions": actions.split(",")}],
        }
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"x5c": [self.der]})

    def serve(self) -> Iterator[str]:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import parse_qs, urlparse

        service = self
        expected = "Basic " + base64.b64encode(b"pusher:s3cret-pw").decode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlparse(self.path).query)
                service.asked.append(query.get("scope", [""])[0])
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.end_headers()
                    return
                body = json.dumps({"token": service.token(query["scope"][0])}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/token"
        finally:
            server.shutdown()


def test_a_registry_with_a_token_service_gets_a_bearer_token(
    registry_bin: Path, archive: tuple[Path, str], tmp_path: Path
) -> None:
    root = tmp_path / "bearer"
    root.mkdir()
    tokens = TokenService(root, "sleuth-test-registry")
    for realm in tokens.serve():
        auth = (
            "auth:\n  token:\n"
            f"    realm: {realm}\n    service: sleuth-test-registry\n"
            f"    issuer: sleuth-test-issuer\n    rootcertbundle: {tokens.bundle}\n"
        )
        for running in _serve(registry_bin, root, extra=auth):
            path, digest = archive
            args = ("--registry", f"{running.address}/team", "--tag", "1", f"probe={path}")
            refused = _push(*args, env={"REGISTRY_USERNAME": "pusher", "REGISTRY_PASSWORD": "x"})
            assert refused.returncode == 1
            assert "token service answered 401" in refused.stderr
            ok = _push(*args, env={"REGISTRY_USERNAME": "pusher", "REGISTRY_PASSWORD": "s3cret-pw"})
            assert ok.returncode == 0, ok.stderr + running.log.read_text(errors="replace")[-2000:]
            assert ok.stdout.strip() == f"{running.address}/team/probe:1@{digest}"
            assert "repository:team/probe:pull,push" in tokens.asked
