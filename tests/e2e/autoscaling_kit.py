"""What the autoscaling run on the real node needs beyond the platform kit: the model server's
stand-in image, a real node that can take a GPU pod, and a Prometheus that finds pods the way a
ServiceMonitor does.

- :func:`with_entrypoint`: an image archive re-packed with another entrypoint and name, its layer
  copied as is. The testkit image with ``sleuth scripted-model`` as entrypoint takes the command
  line the operator renders for vLLM, so the operator's own model Deployment runs it.
- :func:`gpu_node`: the real node advertises ``nvidia.com/gpu`` (an extended resource set on its
  status, as a device plugin would) and the H100 product label, and kwok's simulated H100 nodes
  are cordoned, so the model server's pods run for real; all undone afterwards.
- :func:`scraped_endpoints`: the namespace's agent and model endpoints as Prometheus targets,
  labelled ``namespace`` and ``service`` as prometheus-operator labels a ServiceMonitor's targets
  (what the rendered ScaledObject's queries select).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

GPU = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
H100 = "NVIDIA-H100-80GB-HBM3"


def _blob(tar: tarfile.TarFile, digest: str) -> bytes:
    member = tar.extractfile(f"blobs/sha256/{digest.removeprefix('sha256:')}")
    assert member is not None, digest
    return member.read()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, fileobj=io.BytesIO(data))


def with_entrypoint(archive: Path, out: Path, ref: str, entrypoint: list[str]) -> Path:
    """``archive`` (one image, OCI layout) as ``ref`` with ``entrypoint``; cached by content."""
    if out.exists():
        return out
    with tarfile.open(archive) as src:
        index = json.loads(_blob_or_file(src, "index.json"))
        (entry,) = index["manifests"]
        manifest = json.loads(_blob(src, entry["digest"]))
        config = json.loads(_blob(src, manifest["config"]["digest"]))
        config["config"]["Entrypoint"] = entrypoint
        config["config"]["Cmd"] = []
        config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
        config_digest = "sha256:" + hashlib.sha256(config_bytes).hexdigest()
        manifest["config"] = {**manifest["config"], "digest": config_digest,
                              "size": len(config_bytes)}  # fmt: skip
        manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        manifest_digest = "sha256:" + hashlib.sha256(manifest_bytes).hexdigest()
        annotations = {"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}
        index["manifests"] = [{**entry, "digest": manifest_digest, "size": len(manifest_bytes),
                               "annotations": annotations}]  # fmt: skip
        layers = {f"blobs/sha256/{layer['digest'][7:]}" for layer in manifest["layers"]}
        partial = out.with_suffix(".partial")
        with tarfile.open(partial, "w") as dst:
            for member in src:
                if member.name in layers or member.name == "oci-layout":
                    dst.addfile(member, src.extractfile(member))
            _add(dst, f"blobs/sha256/{config_digest[7:]}", config_bytes)
            _add(dst, f"blobs/sha256/{manifest_digest[7:]}", manifest_bytes)
            _add(dst, "index.json", json.dumps(index).encode())
        partial.rename(out)
    return out


def _blob_or_file(tar: tarfile.TarFile, name: str) -> bytes:
    member = tar.extractfile(name)
    assert member is not None, name
    return member.read()


@contextmanager
def gpu_node(cluster: Any, gpus: int = 2) -> Iterator[None]:
    """The real node takes GPU pods for the block (see the module docstring)."""
    node = cluster.node_name
    simulated = [
        n["metadata"]["name"]
        for n in cluster.get("nodes", "-l", f"{PRODUCT_LABEL}={H100}")["items"]
        if n["metadata"]["name"] != node
    ]
    path = f"/status/capacity/{GPU.replace('/', '~1')}"
    try:
        for name in simulated:
            cluster.kubectl("cordon", name)
        cluster.kubectl("label", "node", node, f"{PRODUCT_LABEL}={H100}", "--overwrite")
        cluster.kubectl(
            "patch", "node", node, "--subresource=status", "--type=json",
            "-p", json.dumps([{"op": "add", "path": path, "value": str(gpus)}]),
        )  # fmt: skip
        yield
    finally:
        cluster.kubectl(
            "patch", "node", node, "--subresource=status", "--type=json",
            "-p", json.dumps([{"op": "remove", "path": path}]), check=False,
        )  # fmt: skip
        cluster.kubectl("label", "node", node, f"{PRODUCT_LABEL}-", check=False)
        for name in simulated:
            cluster.kubectl("uncordon", name, check=False)


def _targets(cluster: Any, namespace: str) -> list[dict[str, Any]]:
    """The ready endpoints of the namespace's agent and model Services, as file_sd groups."""
    groups = []
    for piece in cluster.get("endpointslices", "-n", namespace)["items"]:
        service = piece["metadata"].get("labels", {}).get("kubernetes.io/service-name", "")
        if not service.endswith(("-agent", "-model")):
            continue
        ready = [
            address
            for endpoint in piece.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready")
            for address in endpoint["addresses"]
        ]
        for port in piece.get("ports") or []:
            groups.append(
                {
                    "targets": [f"{address}:{port['port']}" for address in ready],
                    "labels": {"namespace": namespace, "service": service},
                }
            )
    return groups


@contextmanager
def scraped_endpoints(cluster: Any, namespace: str, workdir: Path) -> Iterator[dict[str, Any]]:
    """A Prometheus configuration (scrape every second) whose targets are the namespace's agent
    and model Services' ready endpoints, labelled ``namespace`` and ``service`` as
    prometheus-operator labels a ServiceMonitor's. Debian's Prometheus has no Kubernetes service
    discovery, so a thread writes them to a file_sd file once a second for the block."""
    path = workdir / "targets.json"
    path.write_text("[]")
    stop = threading.Event()

    def refresh() -> None:
        while not stop.is_set():
            with contextlib.suppress(Exception):  # an apiserver hiccup: the next second
                partial = path.with_suffix(".partial")
                partial.write_text(json.dumps(_targets(cluster, namespace)))
                partial.replace(path)
            stop.wait(1)

    writer = threading.Thread(target=refresh, daemon=True)
    writer.start()
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {
                "job_name": "service-endpoints",
                "file_sd_configs": [{"files": [str(path)], "refresh_interval": "1s"}],
            }
        ],
    }
    try:
        yield config
    finally:
        stop.set()
        writer.join(10)


__all__ = ["GPU", "H100", "PRODUCT_LABEL", "gpu_node", "scraped_endpoints", "with_entrypoint"]
