"""Leader election on a coordination.k8s.io/v1 Lease, so that several operator replicas are safe.

Only the holder of the Lease runs kopf; the others wait, serving ``/healthz`` so that their
liveness probe passes. The holder renews the Lease every ``retry`` seconds. A replica takes the
Lease over when its record (holder and renew time) has not changed for ``duration`` seconds, by
its own clock (never comparing clocks across nodes), with an optimistic-concurrency update: of
two replicas racing, the API server accepts one. A holder that cannot renew within ``deadline``
seconds, or finds another holder, has lost: ``on_lost`` runs (by default the process exits at
once, so that no reconcile runs without the Lease; Kubernetes restarts it as a candidate).

On a clean stop the holder releases the Lease (empty holder), so that a standby takes over at
once rather than after ``duration``.

The Lease is read and written through :mod:`sleuth.core.kube`: a create that finds the Lease
there, or a replace whose ``resourceVersion`` is no longer current, is
:class:`~sleuth.core.errors.KubeConflict` — another replica wrote first, and this attempt did
not take the Lease. Any other failure propagates (the elector logs it and tries again).
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from sleuth.core.errors import KubeConflict, KubeRetryable
from sleuth.core.kube import LEASE, Kube, new_api_client

log = logging.getLogger("sleuth.operator.leader")

# Each Lease request is bounded well below the renew deadline (LeaderElector.deadline).
REQUEST_TIMEOUT_SECONDS = 5.0


def default_identity(pod_name: str | None = None) -> str:
    """The pod's name (the CLI reads ``POD_NAME``, from the downward API) or the host name, made
    unique per process."""
    base = pod_name or socket.gethostname()
    return f"{base}_{uuid.uuid4().hex[:8]}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class LeaseClient:
    """Read, create and replace one Lease; False from a write means another replica wrote first."""

    kube: Kube
    namespace: str
    name: str

    def get(self) -> dict[str, Any] | None:
        return self.kube.get(LEASE, self.namespace, self.name)

    def create(self, spec: dict[str, Any]) -> bool:
        lease: dict[str, Any] = {"apiVersion": LEASE.api_version, "kind": LEASE.kind}
        lease |= {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}
        try:
            created = self.kube.create(lease)
        except KubeConflict:
            return False
        if created is None:
            raise KubeRetryable(f"create lease {self.namespace}/{self.name}: namespace not found")
        return True

    def replace(self, lease: dict[str, Any]) -> bool:
        """PUT with the read resourceVersion; False when someone else wrote (or deleted it) in
        between."""
        try:
            return self.kube.replace(lease) is not None
        except KubeConflict:
            return False


def _exit_now() -> None:
    log.critical("leadership lost: exiting so that no reconcile runs without the Lease")
    os._exit(1)


@dataclass
class LeaderElector:
    """Acquire, hold and release one Lease."""

    client: LeaseClient
    identity: str = field(default_factory=default_identity)
    duration: float = 15.0
    deadline: float = 10.0
    retry: float = 2.0
    on_lost: Callable[[], None] = _exit_now
    _observed: tuple[Any, Any] | None = None
    _observed_at: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _renewer: threading.Thread | None = None

    def _spec(self, lease: dict[str, Any] | None) -> dict[str, Any]:
        old = (lease or {}).get("spec") or {}
        transitions = int(old.get("leaseTransitions") or 0)
        if old.get("holderIdentity") not in (None, "", self.identity):
            transitions += 1
        acquired = old.get("acquireTime") if old.get("holderIdentity") == self.identity else None
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.duration)),
            "acquireTime": acquired or _now(),
            "renewTime": _now(),
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards."""
        lease = self.client.get()
        if lease is None:
            return self.client.create(self._spec(None))
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        expired = time.monotonic() - self._observed_at >= float(
            spec.get("leaseDurationSeconds") or self.duration
        )
        if holder not in ("", self.identity) and not expired:
            return False
        lease["spec"] = self._spec(lease)
        return self.client.replace(lease)

    def acquire(self, stop: threading.Event | None = None) -> bool:
        """Block until this process holds the Lease (False if ``stop`` was set first)."""
        stop = stop or threading.Event()
        log.info(
            "%s: waiting for lease %s/%s", self.identity, self.client.namespace, self.client.name
        )
        while not stop.is_set():
            try:
                if self.try_acquire_or_renew():
                    log.info("%s: acquired lease %s", self.identity, self.client.name)
                    return True
            except Exception as err:
                log.warning("lease attempt failed: %s", err)
            stop.wait(self.retry)
        return False

    def _renew_loop(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(self.retry):
            try:
                lease = self.client.get()
                holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
                if lease is not None and holder != self.identity:
                    log.error("lease %s is now held by %s", self.client.name, holder)
                    self.on_lost()
                    return
                if self.try_acquire_or_renew():
                    last_ok = time.monotonic()
            except Exception as err:
                log.warning("lease renewal failed: %s", err)
            if time.monotonic() - last_ok > self.deadline:
                log.error("could not renew lease %s for %.0f s", self.client.name, self.deadline)
                self.on_lost()
                return

    def hold(self) -> None:
        """Keep renewing from a daemon thread."""
        self._renewer = threading.Thread(target=self._renew_loop, name="lease-renewer", daemon=True)
        self._renewer.start()

    def release(self) -> None:
        """Stop renewing and give the Lease up (best effort)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=self.retry + 5)
        try:
            lease = self.client.get()
            if lease and (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"] |= {"holderIdentity": "", "renewTime": _now()}
                self.client.replace(lease)
        except Exception as err:
            log.warning("could not release lease %s: %s", self.client.name, err)


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path.startswith("/healthz") else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"standby\n")

    def log_message(self, format: str, *args: Any) -> None:
        return


def standby_health(address: str, port: int) -> ThreadingHTTPServer:
    """Serve ``/healthz`` while waiting for the Lease; shut it down before kopf starts."""
    server = ThreadingHTTPServer((address, port), _Health)
    threading.Thread(target=server.serve_forever, name="standby-health", daemon=True).start()
    return server


def lead(
    lease: str, namespace: str | None, liveness: str | None, kubeconfig: str | None = None
) -> LeaderElector:
    """Block until this process leads (``sleuth operator --leader-election-lease``), then hold.

    While waiting, ``/healthz`` is served on the liveness address, which kopf takes over once
    this process leads. The Lease is released when the process exits cleanly. ``namespace``: the
    CLI passes ``--leader-election-namespace``, else ``$POD_NAMESPACE``. Credentials:
    ``kubeconfig`` (``--kubeconfig``), else as :func:`sleuth.core.kube.new_api_client` finds them.
    """
    where = namespace or "default"
    kube = Kube(new_api_client(kubeconfig), timeout=REQUEST_TIMEOUT_SECONDS)
    elector = LeaderElector(LeaseClient(kube, where, lease))
    health = None
    if liveness:
        url = urlsplit(liveness)
        health = standby_health(url.hostname or "0.0.0.0", url.port or 80)
    try:
        elector.acquire()
    finally:
        if health is not None:
            health.shutdown()
            health.server_close()
    elector.hold()
    atexit.register(elector.release)
    return elector


__all__ = ["LeaderElector", "LeaseClient", "default_identity", "lead", "standby_health"]
