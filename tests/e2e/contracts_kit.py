"""The running platform the end-to-end tests act on (test_contracts_on_a_real_node.py): the
names of the release and the example, the chart's values, the platform's handle, and what the
tests do to it and read from it — requests through the agent's Service, the trace backend's
view, callers' pods with their own ServiceAccounts, traffic while something changes."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from manifests import TRACE_NAMESPACE
from platform_kit import yaml_docs

from sleuth.tools.sample.contracts import SEED_QUESTION
from tests.support.jaeger import Jaeger, TraceView

RELEASE, SYSTEM = "sleuth", "sleuth-system"
# The chart's workloads.nodeSelector: agents, tool services and eval jobs on the real node.
PLACEMENT = ["--set", "workloads.nodeSelector.kubernetes\\.io/hostname=sleuth-node"]
AGENT_PODS = "app.kubernetes.io/instance=contracts,app.kubernetes.io/component=agent"
APP = "default"  # `kubectl apply -f examples/contracts/` without -n
TRACING_ENDPOINT = f"http://jaeger.{TRACE_NAMESPACE}:4318"  # the chart's tracing.endpoint


@dataclass
class Platform:
    cluster: Any
    images: dict[str, str]  # name → ref
    _token: str = ""

    def kubectl(self, *args: str, **kw: Any) -> Any:
        return self.cluster.kubectl(*args, **kw)

    def get(self, *args: str) -> dict[str, Any]:
        out: dict[str, Any] = self.cluster.get(*args)
        return out

    def apply(self, docs: list[dict[str, Any]]) -> None:
        self.kubectl("apply", "-f", "-", input=yaml_docs(docs))

    def portal_token(self) -> str:
        """A token of the caller the contracts example admits (its ServiceAccount
        ``contracts-portal``, audience the agent's), as the portal's pod would mount it."""
        if not self._token:
            account = "contracts-portal"
            if self.kubectl("get", "serviceaccount", account, "-n", APP, check=False).returncode:
                self.kubectl("create", "serviceaccount", account, "-n", APP)
            audience = self.get("agentdeployment", "contracts", "-n", APP)["status"][
                "agentAudience"
            ]
            created = self.kubectl(
                "create", "token", account, "-n", APP, "--audience", audience, "--duration", "3h"
            )
            self._token = created.stdout.strip()
        return self._token

    def service_url(self, namespace: str, name: str, port_name: str | None = None) -> str:
        svc = self.get("service", name, "-n", namespace)
        ports = svc["spec"]["ports"]
        port = next(p for p in ports if port_name in (None, p.get("name")))["port"]
        return f"http://{svc['spec']['clusterIP']}:{port}"


def chart_values(images: dict[str, str]) -> list[str]:
    """The chart's values as the platform team sets them: the images, two operator replicas (a
    standby can take the Lease), ServiceMonitors, our pods on the real node, the trace backend."""
    repo, tag = images["sleuth"].rsplit(":", 1)
    op_repo, op_tag = images["operator"].rsplit(":", 1)
    return [
        "--set", f"image.repository={repo}", "--set", f"image.tag={tag}",
        "--set", f"operator.image.repository={op_repo}", "--set", f"operator.image.tag={op_tag}",
        "--set", "operator.replicas=2", "--set", "metrics.serviceMonitor.enabled=true",
        *PLACEMENT, "--set", f"tracing.endpoint={TRACING_ENDPOINT}",
    ]  # fmt: skip


def post(
    url: str, body: dict[str, Any], timeout: float = 120, token: str = ""
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def pods_of(platform: Platform, namespace: str, selector: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = platform.get("pods", "-n", namespace, "-l", selector)["items"]
    return items


def jaeger_of(platform: Platform) -> Jaeger:
    """The trace backend's query API, through its Service, from the host."""
    return Jaeger(TRACING_ENDPOINT, platform.service_url(TRACE_NAMESPACE, "jaeger", "query"))


def with_agent_spans(trace: TraceView | None) -> TraceView | None:
    """``trace`` once it holds the agent pod's root, 3 chat and 2 execute_tool spans."""
    names = [] if trace is None else [s.name for s in trace.spans]
    chats = sum(n.startswith("chat ") for n in names)
    tools = sum(n.startswith("execute_tool ") for n in names)
    return trace if "invoke_agent contracts" in names and chats >= 3 and tools >= 2 else None


def served_across_pods(jaeger: Jaeger, tool: str, binding: str) -> bool | None:
    for trace in jaeger.traces(f"sleuth-tool-{binding}", limit=20):
        for served in trace.named(f"tool {tool}"):
            caller = [s for s in trace.spans if s.span_id == served.parent_id]
            if (
                served.service == f"sleuth-tool-{binding}"
                and caller
                and caller[0].name == f"execute_tool {tool}"
                and caller[0].service == "sleuth-agent-contracts"
            ):
                return True
    return None


def eval_traces(jaeger: Jaeger) -> list[TraceView] | None:
    traces = jaeger.traces("sleuth-eval-contracts-weekly", limit=100)
    return [t for t in traces if any(s.name.startswith("eval_case ") for s in t.spans)] or None


# A caller's pod: POSTs the seed's question to the agent with the token its kubelet mounted (a
# TokenRequest of the pod's ServiceAccount, audience the agent's) and prints the status it got.
def audit_records(platform: Platform) -> list[dict[str, Any]]:
    """The audit records every agent pod wrote (their whole output)."""
    out = platform.kubectl("logs", "-n", APP, "-l", AGENT_PODS, "--tail=-1", check=False).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"audit"')]


def under_traffic(platform: Platform, action: Callable[[], None]) -> list[str]:
    """Run ``action`` while one client asks the seed's question through the agent's Service in
    a loop (at most 300 requests, 15 minutes); one outcome per request: ``"200"``, another
    status with the error the body gives, or the client-side error when no answer came."""
    url = platform.service_url(APP, "contracts-agent", "http") + "/v1/query"
    outcomes: list[str] = []
    stop = threading.Event()
    token = platform.portal_token()

    def traffic() -> None:
        deadline = time.monotonic() + 900
        while not stop.is_set() and time.monotonic() < deadline and len(outcomes) < 300:
            started = time.strftime("%H:%M:%S")
            try:
                code, body = post(url, {"question": SEED_QUESTION}, timeout=60, token=token)
                outcomes.append("200" if code == 200 else f"{started} {code} {body}")
            except (OSError, ValueError) as err:  # no answer, or one that is not JSON
                outcomes.append(f"{started} {type(err).__name__}: {err}")

    thread = threading.Thread(target=traffic)
    thread.start()
    try:
        time.sleep(3)
        action()
        time.sleep(5)
    finally:
        stop.set()
        thread.join()
    return outcomes


def assert_none_failed(outcomes: list[str]) -> None:
    assert outcomes, "no request was sent"
    failed = [o for o in outcomes if o != "200"]
    assert not failed, f"{len(failed)} of {len(outcomes)} requests failed: {failed}"
