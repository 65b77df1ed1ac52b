"""Push OCI image archives (tests/cluster/image.sh's) to a registry, with no Docker.

    python3 tests/cluster/push.py --registry registry.example.com/team --tag 0.1.0 \\
        sleuth=~/.cache/sleuth/images/sleuth-<key>.oci.tar \\
        sleuth-operator=~/.cache/sleuth/images/operator-<key>.oci.tar

Each ``NAME=ARCHIVE`` goes to ``<registry>/NAME:<tag>`` over the OCI distribution API: every blob
the registry lacks is uploaded (``HEAD`` first, then ``POST`` + one ``PUT`` streamed from the
archive, never held in memory), then the manifest is put under the tag. Prints one line per
image, ``<registry>/NAME:<tag>@sha256:...``: the digest to pin in the chart
(``image.digest``, ``operator.image.digest``), the same digest the archive's ``index.json``
names, since the manifest's bytes are pushed as they are.

Credentials, never printed: ``REGISTRY_USERNAME`` and ``REGISTRY_PASSWORD``, or the entry of the
registry's host in a Docker config file (``--auth-file``, default ``$DOCKER_CONFIG/config.json``
or ``~/.docker/config.json``; ``auths.<host>.auth``, base64 of ``user:password``). The registry
decides how they are sent: HTTP basic, or a bearer token fetched from the realm its
``WWW-Authenticate`` challenge names (scope ``repository:<name>:pull,push``). HTTPS, except for a
registry on a loopback address (``localhost``, ``127.0.0.1``, ``[::1]``) or with
``--plain-http``.

Standard library only, like oci.py: it runs with the host's python3 that image.sh uses.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
TIMEOUT = 600.0


class PushError(Exception):
    """A push that cannot go on; the message names the image and the registry's answer."""


@dataclass
class Archive:
    """An OCI image layout in a tar: its manifest and where each blob is."""

    path: Path
    manifest: bytes
    media_type: str
    digest: str
    blobs: dict[str, tarfile.TarInfo]

    @classmethod
    def open(cls, path: Path) -> Archive:
        with tarfile.open(path) as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            index = json.loads(_read(tar, members, "index.json"))
            (entry,) = index["manifests"]
            digest = entry["digest"]
            manifest = _read(tar, members, _blob_path(digest))
        doc = json.loads(manifest)
        media_type = doc.get("mediaType") or entry.get("mediaType") or MANIFEST_TYPES[0]
        wanted = [doc["config"]["digest"], *(layer["digest"] for layer in doc["layers"])]
        blobs = {}
        for blob in wanted:
            if _blob_path(blob) not in members:
                raise PushError(f"{path}: blob {blob} is not in the archive")
            blobs[blob] = members[_blob_path(blob)]
        return cls(path, manifest, media_type, digest, blobs)


def _blob_path(digest: str) -> str:
    algorithm, _, hexdigest = digest.partition(":")
    return f"blobs/{algorithm}/{hexdigest}"


def _read(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo], name: str) -> bytes:
    if name not in members:
        raise PushError(f"{tar.name}: no {name}: not an OCI image layout")
    f = tar.extractfile(members[name])
    assert f is not None
    return f.read()


@dataclass
class Registry:
    """One registry host and the repository path below it."""

    host: str
    prefix: str
    scheme: str
    credentials: tuple[str, str] | None = None
    tokens: dict[str, str] = field(default_factory=dict)  # repository → bearer token
    basic: bool = False

    @classmethod
    def parse(cls, text: str, plain_http: bool, credentials: tuple[str, str] | None) -> Registry:
        host, _, prefix = text.strip("/").partition("/")
        if not host or "://" in text:
            raise PushError(f"--registry {text!r}: expected host[:port][/path], no scheme")
        loopback = host.split(":")[0] in LOOPBACK or host.startswith("[::1]")
        scheme = "http" if plain_http or loopback else "https"
        return cls(host, prefix, scheme, credentials)

    def repository(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def url(self, path: str) -> str:
        return f"{self.scheme}://{self.host}{path}"

    def request(
        self,
        method: str,
        url: str,
        repository: str,
        *,
        body: bytes | IO[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request, authenticated as the registry asks (once challenged, every later one)."""
        for attempt in range(2):
            sent = dict(headers or {})
            auth = self._authorization(repository)
            if auth:
                sent["Authorization"] = auth
            if hasattr(body, "seek"):
                body.seek(0)  # type: ignore[union-attr]
            req = urllib.request.Request(url, data=body, headers=sent, method=method)
            try:
                with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                    return resp.status, dict(resp.headers), resp.read()
            except urllib.error.HTTPError as err:
                answer = (err.code, dict(err.headers), err.read())
                if err.code == 401 and attempt == 0 and self._challenged(err.headers, repository):
                    continue
                return answer
            except urllib.error.URLError as err:
                raise PushError(f"{self.host}: {method} {url}: {err.reason}") from None
        raise AssertionError("unreachable")

    def _authorization(self, repository: str) -> str | None:
        if repository in self.tokens:
            return f"Bearer {self.tokens[repository]}"
        if self.basic and self.credentials:
            user, password = self.credentials
            return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        return None

    def _challenged(self, headers: Any, repository: str) -> bool:
        """Settle how to authenticate after a 401; False when there is nothing more to try."""
        challenge = headers.get("WWW-Authenticate", "")
        scheme, _, params = challenge.partition(" ")
        if scheme.lower() == "basic":
            if self.basic or not self.credentials:
                return False
            self.basic = True
            return True
        if scheme.lower() == "bearer" and repository not in self.tokens:
            found = dict(re.findall(r'(\w+)="([^"]*)"', params))
            # One token for the whole push: the challenge of a HEAD names pull only.
            found["scope"] = f"repository:{repository}:pull,push"
            self.tokens[repository] = self._token(found)
            return True
        return False

    def _token(self, params: dict[str, str]) -> str:
        realm = params.get("realm")
        if not realm:
            raise PushError(f"{self.host}: a bearer challenge without a realm")
        query = {k: v for k, v in params.items() if k in ("service", "scope")}
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(query)
        headers = {}
        if self.credentials:
            user, password = self.credentials
            headers["Authorization"] = (
                "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
            )
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), timeout=60
            ) as resp:
                doc = json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise PushError(
                f"{self.host}: the token service answered {err.code} (check the credentials)"
            ) from None
        token = doc.get("token") or doc.get("access_token")
        if not token:
            raise PushError(f"{self.host}: the token service returned no token")
        return str(token)


def _fail(image: str, what: str, status: int, body: bytes) -> PushError:
    try:
        errors = json.loads(body).get("errors") or []
        reason = "; ".join(f"{e.get('code')}: {e.get('message')}" for e in errors)
    except (ValueError, AttributeError):
        reason = body[:200].decode("utf-8", "replace")
    hint = (
        " (credentials: REGISTRY_USERNAME/REGISTRY_PASSWORD or --auth-file)"
        if status
        in (
            401,
            403,
        )
        else ""
    )
    return PushError(f"{image}: {what}: HTTP {status}: {reason or 'no reason given'}{hint}")


def push(registry: Registry, name: str, tag: str, archive: Archive) -> str:
    """Push ``archive`` as ``<registry>/name:tag``; returns the manifest digest."""
    repository = registry.repository(name)
    image = f"{registry.host}/{repository}:{tag}"
    with tarfile.open(archive.path) as tar:
        for digest, member in archive.blobs.items():
            blob_url = registry.url(f"/v2/{repository}/blobs/{digest}")
            status, _, body = registry.request("HEAD", blob_url, repository)
            if status == 200:
                continue
            status, headers, body = registry.request(
                "POST", registry.url(f"/v2/{repository}/blobs/uploads/"), repository, body=b""
            )
            if status != 202:
                raise _fail(image, "starting an upload", status, body)
            location = urllib.parse.urljoin(registry.url("/"), headers["Location"])
            location += ("&" if "?" in location else "?") + urllib.parse.urlencode(
                {"digest": digest}
            )
            data = tar.extractfile(member)
            assert data is not None
            status, _, body = registry.request(
                "PUT",
                location,
                repository,
                body=data,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Length": str(member.size),
                },
            )
            if status != 201:
                raise _fail(image, f"uploading {digest}", status, body)
    status, headers, body = registry.request(
        "PUT",
        registry.url(f"/v2/{repository}/manifests/{tag}"),
        repository,
        body=archive.manifest,
        headers={"Content-Type": archive.media_type},
    )
    if status != 201:
        raise _fail(image, "putting the manifest", status, body)
    pushed = headers.get("Docker-Content-Digest", archive.digest)
    if pushed != archive.digest:
        raise PushError(
            f"{image}: the registry stored {pushed}, the archive holds {archive.digest}"
        )
    return archive.digest


def credentials(registry_host: str, auth_file: Path | None) -> tuple[str, str] | None:
    """REGISTRY_USERNAME/REGISTRY_PASSWORD, else the host's entry in a Docker config file."""
    user, password = os.environ.get("REGISTRY_USERNAME"), os.environ.get("REGISTRY_PASSWORD")
    if user and password:
        return user, password
    if auth_file is None:
        folder = os.environ.get("DOCKER_CONFIG") or str(Path.home() / ".docker")
        auth_file = Path(folder) / "config.json"
        if not auth_file.exists():
            return None
    try:
        auths = json.loads(auth_file.read_text(encoding="utf-8")).get("auths") or {}
    except (OSError, ValueError) as err:
        raise PushError(f"--auth-file {auth_file}: cannot read it ({err})") from None
    for key in (registry_host, f"https://{registry_host}", f"http://{registry_host}"):
        entry = auths.get(key)
        if entry and entry.get("auth"):
            decoded = base64.b64decode(entry["auth"]).decode()
            name, _, secret = decoded.partition(":")
            return name, secret
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="push.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--registry", required=True, help="host[:port][/path]")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--plain-http", action="store_true", help="HTTP, not HTTPS")
    parser.add_argument("--auth-file", type=Path, help="Docker config file with auths")
    parser.add_argument("images", nargs="+", metavar="NAME=ARCHIVE")
    args = parser.parse_args(argv)
    try:
        pairs = [_pair(text) for text in args.images]
        host = args.registry.strip("/").partition("/")[0]
        registry = Registry.parse(args.registry, args.plain_http, credentials(host, args.auth_file))
        for name, path in pairs:
            digest = push(registry, name, args.tag, Archive.open(path))
            print(f"{registry.host}/{registry.repository(name)}:{args.tag}@{digest}", flush=True)
    except (PushError, OSError, tarfile.TarError) as err:
        print(f"push.py: error: {err}", file=sys.stderr)
        return 1
    return 0


def _pair(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not re.fullmatch(r"[a-z0-9]+([._-][a-z0-9]+)*", name):
        raise PushError(f"{text!r}: expected NAME=ARCHIVE, NAME a lowercase repository name")
    return name, Path(path).expanduser()


if __name__ == "__main__":
    raise SystemExit(main())
