"""Names, labels, owner references and pod hardening shared by every renderer."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from sleuth.core.api.v1alpha1.allowlists import Allowlists
from sleuth.core.api.v1alpha1.common import API_VERSION, Resources
from sleuth.core.api.v1alpha1.serving import DEFAULT_VLLM_IMAGE
from sleuth.operator.render.tracing import TracingDefaults

Component = Literal["model", "agent", "tool", "eval"]
PullPolicy = Literal["Always", "IfNotPresent", "Never"]
PULL_POLICIES: tuple[PullPolicy, ...] = ("Always", "IfNotPresent", "Never")
Autoscaler = Literal["keda", "hpa"]  # the chart's autoscaling.engine (render/autoscale.py)
DEFAULT_PROMETHEUS_ADDRESS = "http://prometheus-operated.monitoring.svc:9090"

MANAGED_BY = "sleuth-operator"
PART_OF = "sleuth"
AGENT_LABEL = "sleuth.dev/agent"
CONFIG_HASH_ANNOTATION = "sleuth.dev/config-hash"
DEFAULT_SLEUTH_IMAGE = "ghcr.io/sleuth-dev/sleuth:0.1.0"
DEFAULT_RUNBOOK_BASE_URL = "https://github.com/sleuth-dev/sleuth/blob/main/docs/runbooks"

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Owner:
    """The custom resource that children are rendered for."""

    kind: str
    name: str
    namespace: str
    uid: str

    def reference(self) -> dict[str, Any]:
        """An ownerReference marking the resource as the children's controller."""
        return {
            "apiVersion": API_VERSION,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class ApiServer:
    """Where the pods reach the Kubernetes API server: the addresses (CIDRs) and port of the
    ``kubernetes`` Service's endpoints. A NetworkPolicy matches a connection after the Service's
    ClusterIP has been translated to one of these, so they, not the ClusterIP, are what a policy
    must admit (render/netpol_agent.py)."""

    cidrs: tuple[str, ...]
    port: int


@dataclass(frozen=True)
class RenderSettings:
    """Operator-wide settings that renderers need (not part of any spec)."""

    sleuth_image: str = DEFAULT_SLEUTH_IMAGE
    model_image: str = DEFAULT_VLLM_IMAGE  # vLLM, when spec.model.image is empty
    agent_port: int = 8080
    tool_port: int = 8080
    model_port: int = 8000
    cluster_domain: str = "cluster.local"
    runbook_base_url: str = DEFAULT_RUNBOOK_BASE_URL  # <base>/<AlertName>.md
    # Where the CPU workloads (agents, tool services, eval jobs) run: the chart's
    # workloads.nodeSelector and workloads.tolerations. vLLM pods keep their GPU placement.
    workload_node_selector: dict[str, str] = field(default_factory=dict)
    workload_tolerations: list[dict[str, Any]] = field(default_factory=list)
    # OpenTelemetry export of agents and tool services unless spec.agent.tracing says otherwise:
    # the chart's tracing values (render/tracing.py). Off by default.
    tracing: TracingDefaults = field(default_factory=TracingDefaults)
    # NetworkPolicy peers admitted to the agent, model server and tool service ports besides
    # their callers (the chart's networkPolicy.metricsFrom: Prometheus); render/netpol.py.
    metrics_peers: list[dict[str, Any]] = field(default_factory=list)
    # The cluster's ServiceAccount token issuer (kube-apiserver --service-account-issuer): the
    # agents accept its tokens (render/access.py). The operator reads it from the API server's
    # /.well-known/openid-configuration at start unless told.
    service_account_issuer: str = "https://kubernetes.default.svc.cluster.local"
    # The API server's endpoints, which an agent that admits ServiceAccount tokens reaches for
    # the issuer's JWKS: the chart's networkPolicy.apiServer (operator flags --api-server-cidr,
    # --api-server-port), else read from EndpointSlice default/kubernetes at start
    # (sleuth.operator.apiserver); None: unknown, so no policy admits it (fail closed).
    api_server: ApiServer | None = None
    # What a platform's Prometheus needs of the EvalSchedules' PrometheusRules
    # (render/evalrules.py): extra labels its ruleSelector matches (the chart's
    # metrics.prometheusRule.labels, e.g. release=kube-prometheus-stack), and the label under which
    # it stores the EvalSchedule's namespace of the operator's series: "namespace" when the
    # operator is scraped with honorLabels, "exported_namespace" when not.
    rule_labels: dict[str, str] = field(default_factory=dict)
    series_namespace_label: str = "namespace"
    # Where specs may point and what they may run (the chart's admission values, operator flags
    # --allowed-*); the operator's own images are always allowed (sleuth.operator.guard).
    allowlists: Allowlists = field(default_factory=Allowlists)
    # How every rendered pod pulls its images (the chart's imagePullSecrets and image.pullPolicy,
    # operator flags --image-pull-secret and --image-pull-policy): Secrets by name, looked up in
    # the pod's own namespace; None: the cluster's default policy.
    image_pull_secrets: tuple[str, ...] = ()
    image_pull_policy: PullPolicy | None = None
    # What scales the autoscaled Deployments (the chart's autoscaling values): KEDA, whose
    # ScaledObjects query the Prometheus at prometheus_address, or a plain HPA (agents only).
    autoscaler: Autoscaler = "keda"
    prometheus_address: str = DEFAULT_PROMETHEUS_ADDRESS


def pull_images(pod_spec: Manifest, settings: RenderSettings) -> Manifest:
    """Add the operator-wide pull Secrets and pull policy to a pod spec (every pod the operator
    renders: model server, agent, tool services, eval runs); nothing when none is set."""
    if settings.image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": n} for n in settings.image_pull_secrets]
    if settings.image_pull_policy is not None:
        for container in pod_spec.get("containers", []):
            container["imagePullPolicy"] = settings.image_pull_policy
    return pod_spec


def place_workload(pod_spec: Manifest, settings: RenderSettings) -> Manifest:
    """Add the operator-wide CPU placement and image pulling to a pod spec (nothing when none
    is set)."""
    pull_images(pod_spec, settings)
    if settings.workload_node_selector:
        pod_spec["nodeSelector"] = dict(sorted(settings.workload_node_selector.items()))
    if settings.workload_tolerations:
        pod_spec["tolerations"] = copy.deepcopy(settings.workload_tolerations)
    return pod_spec


def selector_labels(component: Component, instance: str) -> dict[str, str]:
    """The immutable subset of labels used in Deployment selectors and policies."""
    return {
        "app.kubernetes.io/name": f"sleuth-{component}",
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
    }


def labels(component: Component, instance: str, agent: str) -> dict[str, str]:
    """Every label a child carries: the standard ``app.kubernetes.io/*`` set plus its agent."""
    return {
        **selector_labels(component, instance),
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        AGENT_LABEL: agent,
    }


def metadata(
    name: str, owner: Owner, component: Component, agent: str, **extra: Any
) -> dict[str, Any]:
    """Object metadata: name, namespace, labels and the owner reference."""
    return {
        "name": name,
        "namespace": owner.namespace,
        "labels": labels(component, owner.name, agent),
        "ownerReferences": [owner.reference()],
        **extra,
    }


def service_url(name: str, namespace: str, port: int, path: str = "") -> str:
    """The in-cluster URL of a Service."""
    return f"http://{name}.{namespace}.svc:{port}{path}"


def config_hash(data: Any) -> str:
    """A short, stable digest of configuration; changing it rolls the pods."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def resources(spec: Resources | None, **limits: Any) -> dict[str, Any]:
    """A container ``resources`` block from a spec, with extra limits (e.g. GPUs) merged in."""
    out: dict[str, Any] = {}
    if spec is not None and spec.requests:
        out["requests"] = dict(spec.requests)
    merged = {**(spec.limits if spec is not None and spec.limits else {}), **limits}
    if merged:
        out["limits"] = merged
    return out


def secret_env(name: str, secret: str, key: str) -> dict[str, Any]:
    """An environment variable read from a Secret key."""
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def hardened_pod() -> dict[str, Any]:
    """Pod security context for the sleuth image: non-root, default seccomp profile."""
    return {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def hardened_container(read_only_root: bool = True) -> dict[str, Any]:
    """Container security context: no privilege escalation, no capabilities."""
    return {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": read_only_root,
        "capabilities": {"drop": ["ALL"]},
    }


# A sleuth process imports its stack before it listens: on a loaded 2-core node that took up to a
# minute for the agent (ragas, numpy, qdrant-client), and a liveness probe that starts at once
# killed it first (seen on the real test node). The startup probe holds liveness off for up to
# STARTUP_SECONDS; afterwards liveness and readiness apply as before.
STARTUP_PERIOD_SECONDS = 2
STARTUP_SECONDS = 180


# Seconds a terminating agent or tool pod keeps accepting connections before it is told to stop.
# Removing a pod from a Service is asynchronous: the endpoints controller, then every node's
# kube-proxy, must see it terminating before no new connection lands on it. Without the pause the
# server closes its socket at once and a client routed there in that window is refused (seen as
# a failed request in the real node's rollout test).
DRAIN_SECONDS = 5


def draining() -> Manifest:
    """The container lifecycle of a pod that drains: a preStop pause of :data:`DRAIN_SECONDS`
    (kubelet's own sleep action, so the image needs no shell), after which SIGTERM makes the
    server stop accepting and finish the requests in flight."""
    return {"lifecycle": {"preStop": {"sleep": {"seconds": DRAIN_SECONDS}}}}


def grace_period(in_flight_seconds: int) -> int:
    """terminationGracePeriodSeconds of a draining pod: the pause, the longest request in flight,
    and a margin for the process to exit."""
    return DRAIN_SECONDS + in_flight_seconds + 5


def sleuth_probes() -> Manifest:
    """Startup, readiness and liveness probes of an agent or tool service container."""
    return {
        "startupProbe": http_probe(
            "/healthz", "http", STARTUP_PERIOD_SECONDS, STARTUP_SECONDS // STARTUP_PERIOD_SECONDS
        ),
        "readinessProbe": http_probe("/readyz", "http", 5, 3),
        "livenessProbe": http_probe("/healthz", "http", 10, 3),
    }


def http_probe(path: str, port: str, period: int, failures: int, timeout: int = 3) -> Manifest:
    return {
        "httpGet": {"path": path, "port": port},
        "periodSeconds": period,
        "failureThreshold": failures,
        "timeoutSeconds": timeout,
    }


__all__ = [
    "AGENT_LABEL",
    "CONFIG_HASH_ANNOTATION",
    "DEFAULT_PROMETHEUS_ADDRESS",
    "DEFAULT_RUNBOOK_BASE_URL",
    "DEFAULT_SLEUTH_IMAGE",
    "MANAGED_BY",
    "PULL_POLICIES",
    "ApiServer",
    "Autoscaler",
    "Component",
    "Manifest",
    "Owner",
    "PullPolicy",
    "RenderSettings",
    "config_hash",
    "hardened_container",
    "hardened_pod",
    "http_probe",
    "labels",
    "metadata",
    "pull_images",
    "resources",
    "secret_env",
    "selector_labels",
    "service_url",
]


def configured_workload(
    name: str,
    meta: Manifest,
    *,
    replicas: int | None,
    selector: dict[str, str],
    pod_labels: dict[str, str],
    config_data: Any,
    container: Manifest,
    port: int,
    settings: RenderSettings,
    in_flight_seconds: int,
) -> tuple[Manifest, Manifest]:
    """A Deployment running ``container`` with the ConfigMap ``name`` mounted, and its Service.

    Shared by the agent and the tool services: hardened pod, no service-account token, a
    config-hash annotation so a configuration change rolls the pods, and one HTTP port.

    A pod being replaced drains (:func:`draining`): it keeps serving for
    :data:`DRAIN_SECONDS` while the Service stops sending it new connections, then finishes the
    requests in flight, which take at most ``in_flight_seconds`` (the request or tool-call
    timeout), before it is killed.
    """
    container = {**container, **draining()}
    deployment: Manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    "annotations": {CONFIG_HASH_ANNOTATION: config_hash(config_data)},
                },
                "spec": place_workload(
                    {
                        "automountServiceAccountToken": False,
                        "terminationGracePeriodSeconds": grace_period(in_flight_seconds),
                        "securityContext": hardened_pod(),
                        "containers": [container],
                        "volumes": [
                            {"name": "config", "configMap": {"name": name}},
                            {"name": "tmp", "emptyDir": {}},
                        ],
                    },
                    settings,
                ),
            },
        },
    }
    if replicas is None:  # a scaler owns them (render/autoscale.py)
        del deployment["spec"]["replicas"]
    service: Manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": copy.deepcopy(meta),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": port, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    return deployment, service
