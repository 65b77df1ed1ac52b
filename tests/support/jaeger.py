"""A real trace backend for tests: Jaeger v2 on free loopback ports, and reading traces back.

The binary is built from the Go module proxy by ``tests/cluster/build.sh jaeger`` into
``${SLEUTH_CACHE:-~/.cache/sleuth}/bin/jaeger-<JAEGER_VERSION>/jaeger`` (the version is pinned in
tests/cluster/versions.env), once; :func:`jaeger_binary` builds it when it is missing. It runs
with ``tests/support/jaeger.yaml``: an OTLP/HTTP receiver, in-memory storage and the query API,
every listener on 127.0.0.1.

* :func:`running_jaeger` — ``with running_jaeger(binary) as backend:`` starts one, waits until it
  is ready (with a deadline), and stops it when the block ends (no process is left).
* :func:`jaeger` — the pytest fixture (session scope, registered in tests/conftest.py): one
  backend for the session; skipped when the binary cannot be built (a failure under CI).
* :class:`Jaeger` — ``otlp_endpoint`` (the base URL to give ``OTEL_EXPORTER_OTLP_ENDPOINT``),
  ``query_url``, and :meth:`Jaeger.trace` / :meth:`Jaeger.wait_trace` / :meth:`Jaeger.traces`
  to read traces back as :class:`TraceView`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from sleuth.core.process import LOOPBACK, free_port, stop_process, wait_healthy
from tests.support.paths import ROOT
from tests.support.polling import eventually

CONFIG = Path(__file__).with_name("jaeger.yaml")
BUILD = ROOT / "tests" / "cluster" / "build.sh"
VERSIONS = ROOT / "tests" / "cluster" / "versions.env"
# A cold start on a loaded 2-core machine; a warm one takes about a second.
START_TIMEOUT_S = 60.0
# What the port variables of jaeger.yaml are called.
PORT_VARIABLES = (
    "JAEGER_OTLP_HTTP_PORT",
    "JAEGER_QUERY_HTTP_PORT",
    "JAEGER_QUERY_GRPC_PORT",
    "JAEGER_HEALTH_PORT",
)


class JaegerUnavailable(RuntimeError):
    """The Jaeger binary is not built and could not be built here."""


def jaeger_version() -> str:
    """``JAEGER_VERSION`` of tests/cluster/versions.env."""
    for line in VERSIONS.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "JAEGER_VERSION":
            return value.strip()
    raise JaegerUnavailable(f"{VERSIONS} pins no JAEGER_VERSION")


def cache_dir() -> Path:
    return Path(os.environ.get("SLEUTH_CACHE", Path.home() / ".cache" / "sleuth"))


def jaeger_binary(build: bool = True) -> Path:
    """The cached binary of the pinned version; built first (minutes, once) when missing."""
    binary = cache_dir() / "bin" / f"jaeger-{jaeger_version()}" / "jaeger"
    if binary.is_file():
        return binary
    if not build:
        raise JaegerUnavailable(f"{binary} is not built (tests/cluster/build.sh jaeger)")
    done = subprocess.run([str(BUILD), "jaeger"], capture_output=True, text=True)
    if done.returncode != 0 or not binary.is_file():
        raise JaegerUnavailable(f"tests/cluster/build.sh jaeger failed:\n{done.stderr[-3000:]}")
    return binary


@dataclass(frozen=True)
class SpanView:
    """One span of a trace as the query API returns it, flattened for assertions."""

    name: str
    span_id: str
    parent_id: str | None
    service: str
    kind: str | None  # server / client / internal / producer / consumer
    attributes: dict[str, Any]
    events: list[dict[str, Any]]  # each: {"name": ..., **attributes}
    duration_us: int
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id) of each span it links to


@dataclass(frozen=True)
class TraceView:
    """A trace read back from Jaeger: its id, its spans, and the raw JSON."""

    trace_id: str
    spans: list[SpanView]
    raw: dict[str, Any]

    def named(self, name: str) -> list[SpanView]:
        """The spans called ``name`` (in the order the API lists them)."""
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> SpanView:
        """The single span called ``name``; fails when there are none or several."""
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return sorted(s.name for s in self.spans)

    def children(self, parent: SpanView) -> list[SpanView]:
        return [s for s in self.spans if s.parent_id == parent.span_id]


def _tags(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {t["key"]: t["value"] for t in items}


def parse_trace(data: dict[str, Any]) -> TraceView:
    """One element of the query API's ``data`` list as a :class:`TraceView`."""
    processes = data.get("processes", {})
    spans = []
    for span in data.get("spans", []):
        tags = _tags(span.get("tags", []))
        refs = span.get("references", [])
        parents = [r["spanID"] for r in refs if r["refType"] == "CHILD_OF"]
        links = tuple((r["traceID"], r["spanID"]) for r in refs if r["spanID"] not in parents[:1])
        spans.append(
            SpanView(
                name=span["operationName"],
                span_id=span["spanID"],
                parent_id=parents[0] if parents else None,
                service=processes.get(span.get("processID"), {}).get("serviceName", ""),
                kind=tags.pop("span.kind", None),
                attributes=tags,
                events=[_tags(log.get("fields", [])) for log in span.get("logs", [])],
                duration_us=int(span.get("duration", 0)),
                links=links,
            )
        )
    return TraceView(trace_id=data["traceID"], spans=spans, raw=data)


@dataclass(frozen=True)
class Jaeger:
    """A running Jaeger: where to send spans and where to read them back."""

    otlp_endpoint: str  # http://127.0.0.1:<port>; the OTLP/HTTP traces path is /v1/traces
    query_url: str  # http://127.0.0.1:<port>: /api/traces/<id>, /api/traces?service=..., the UI

    @property
    def otlp_traces_url(self) -> str:
        """The full OTLP/HTTP traces URL (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``)."""
        return self.otlp_endpoint + "/v1/traces"

    def _get(self, path: str, params: dict[str, Any] | None = None) -> httpx.Response:
        with httpx.Client(base_url=self.query_url, trust_env=False, timeout=10) as client:
            return client.get(path, params=params)

    def trace(self, trace_id: str) -> TraceView | None:
        """The trace with this id (32 hex digits), None while Jaeger has none of its spans."""
        response = self._get(f"/api/traces/{trace_id}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        data = response.json().get("data") or []
        return parse_trace(data[0]) if data else None

    def wait_trace(self, trace_id: str, spans: int = 1, timeout: float = 30.0) -> TraceView:
        """The trace once it holds at least ``spans`` spans (spans of one trace may arrive in
        several exports); fails after ``timeout`` seconds."""

        def ready() -> TraceView | None:
            found = self.trace(trace_id)
            return found if found is not None and len(found.spans) >= spans else None

        return eventually(ready, timeout, f"trace {trace_id} with {spans} span(s) in Jaeger")

    def traces(self, service: str, limit: int = 20, lookback: str = "1h") -> list[TraceView]:
        """The latest traces with a span of ``service`` (at most ``limit``)."""
        response = self._get(
            "/api/traces", {"service": service, "limit": limit, "lookback": lookback}
        )
        response.raise_for_status()
        return [parse_trace(t) for t in response.json().get("data") or []]

    def services(self) -> list[str]:
        """Names of every service with a span stored."""
        response = self._get("/api/services")
        response.raise_for_status()
        return sorted(response.json().get("data") or [])


@contextmanager
def running_jaeger(binary: Path, timeout: float = START_TIMEOUT_S) -> Iterator[Jaeger]:
    """Start ``binary`` with tests/support/jaeger.yaml on free loopback ports; yield it once its
    health check and query API answer; stop it (SIGTERM, then kill) when the block ends."""
    ports = {name: free_port() for name in PORT_VARIABLES}
    backend = Jaeger(
        otlp_endpoint=f"http://{LOOPBACK}:{ports['JAEGER_OTLP_HTTP_PORT']}",
        query_url=f"http://{LOOPBACK}:{ports['JAEGER_QUERY_HTTP_PORT']}",
    )
    env = {**os.environ, "JAEGER_HOST": LOOPBACK, **{n: str(port) for n, port in ports.items()}}
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [str(binary), "--config", str(CONFIG)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

        def tail() -> str:
            log.flush()
            log.seek(0)
            return log.read()[-3000:]

        try:
            health = f"http://{LOOPBACK}:{ports['JAEGER_HEALTH_PORT']}/status"
            wait_healthy(health, process, timeout=timeout, name="jaeger", output=tail)
            wait_healthy(
                backend.query_url + "/api/services",
                process,
                timeout=timeout,
                name="jaeger query",
                output=tail,
            )
            yield backend
        finally:
            stop_process(process)


def required_binary() -> Path:
    """:func:`jaeger_binary` in a test: skipped when it cannot be built, failed under CI."""
    try:
        return jaeger_binary()
    except JaegerUnavailable as err:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Jaeger is required under CI: {err}", pytrace=False)
        pytest.skip(f"Jaeger unavailable: {err}")


@pytest.fixture(scope="session")
def jaeger() -> Iterator[Jaeger]:
    """One Jaeger for the test session (built on first use; skipped if it cannot be built,
    except under CI)."""
    with running_jaeger(required_binary()) as backend:
        yield backend


__all__ = [
    "CONFIG",
    "Jaeger",
    "JaegerUnavailable",
    "SpanView",
    "TraceView",
    "jaeger",
    "jaeger_binary",
    "jaeger_version",
    "parse_trace",
    "required_binary",
    "running_jaeger",
]
