"""The one Kubernetes client of every sleuth package, with one policy for its errors.

The operator's reconcilers, its leader election and the eval runs' status writer all call the API
server through :class:`Kube`; callers add their own retry policy on top of these errors.

Credentials (:func:`new_api_client`), the same order for every command:

1. an explicit kubeconfig file (``--kubeconfig``);
2. in a pod (``KUBERNETES_SERVICE_HOST`` is set): the pod's ServiceAccount;
3. ``$KUBECONFIG`` (a path, or several separated by ``:``), else ``~/.kube/config``.

None usable: :class:`~sleuth.core.errors.ConfigError` saying why.

Errors follow one policy, :func:`sleuth.core.kubestatus.classify` (its docstring has it).

Writes to children are server-side apply under one field manager, so applying the same object
twice changes nothing (no new resourceVersion).
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import urllib3
from kubernetes import client
from kubernetes import config as _config

from sleuth.core.api.v1alpha1 import kinds
from sleuth.core.api.v1alpha1.common import API_VERSION
from sleuth.core.errors import ConfigError, KubeRetryable
from sleuth.core.kubestatus import classify

config: Any = _config  # the kubernetes package has no type hints

log = logging.getLogger(__name__)

FIELD_MANAGER = "sleuth-operator"
TIMEOUT_SECONDS = 20.0
# Fault injection for tests: sleep this long before each apply, widening the window in which a
# killed operator leaves a reconcile half done. Zero (off) unless the variable is set.
APPLY_DELAY_SECONDS = float(os.environ.get("SLEUTH_FAULT_APPLY_DELAY_SECONDS", "0"))


@dataclass(frozen=True)
class Resource:
    """An API resource: where its objects live."""

    api_version: str
    kind: str
    plural: str

    def path(self, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
        """The REST path; ``namespace`` None lists across all namespaces."""
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        scope = "" if namespace is None else f"/namespaces/{quote(namespace)}"
        path = f"{base}{scope}/{self.plural}"
        if name is not None:
            path += f"/{quote(name)}"
        if sub is not None:
            path += f"/{sub}"
        return path


def _sleuth(kind: kinds.Kind) -> Resource:
    return Resource(API_VERSION, kind.kind, kind.plural)


AGENT_DEPLOYMENT = _sleuth(kinds.AGENT_DEPLOYMENT)
TOOL_BINDING = _sleuth(kinds.TOOL_BINDING)
EVAL_SCHEDULE = _sleuth(kinds.EVAL_SCHEDULE)
DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")
SERVICE = Resource("v1", "Service", "services")
CONFIG_MAP = Resource("v1", "ConfigMap", "configmaps")
SECRET = Resource("v1", "Secret", "secrets")
EVENT = Resource("v1", "Event", "events")
NETWORK_POLICY = Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies")
CRON_JOB = Resource("batch/v1", "CronJob", "cronjobs")
PROMETHEUS_RULE = Resource("monitoring.coreos.com/v1", "PrometheusRule", "prometheusrules")
SERVICE_ACCOUNT = Resource("v1", "ServiceAccount", "serviceaccounts")
ROLE = Resource("rbac.authorization.k8s.io/v1", "Role", "roles")
ROLE_BINDING = Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")
POD_DISRUPTION_BUDGET = Resource("policy/v1", "PodDisruptionBudget", "poddisruptionbudgets")
LEASE = Resource("coordination.k8s.io/v1", "Lease", "leases")
HORIZONTAL_POD_AUTOSCALER = Resource(
    "autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"
)
SCALED_OBJECT = Resource("keda.sh/v1alpha1", "ScaledObject", "scaledobjects")  # KEDA's
POD = Resource("v1", "Pod", "pods")

RESOURCES = {
    (r.api_version, r.kind): r
    for r in (
        AGENT_DEPLOYMENT,
        TOOL_BINDING,
        DEPLOYMENT,
        SERVICE,
        CONFIG_MAP,
        SECRET,
        EVENT,
        NETWORK_POLICY,
        EVAL_SCHEDULE,
        CRON_JOB,
        PROMETHEUS_RULE,
        SERVICE_ACCOUNT,
        ROLE,
        ROLE_BINDING,
        POD_DISRUPTION_BUDGET,
        LEASE,
        POD,
        HORIZONTAL_POD_AUTOSCALER,
        SCALED_OBJECT,
    )
}


def resource_of(manifest: dict[str, Any]) -> Resource:
    """The resource a manifest belongs to."""
    return RESOURCES[(manifest["apiVersion"], manifest["kind"])]


def new_api_client(kubeconfig: str | None = None, connections: int = 0) -> Any:
    """An API client with the credentials found first, in the order of the module docstring:
    ``kubeconfig``, else in-cluster, else ``$KUBECONFIG`` or ``~/.kube/config``; it keeps at
    least ``connections`` connections open (one per thread that uses it at once: the kubernetes
    package's default, five per core, would open a new TLS connection for every request beyond
    that and close it after)."""
    configuration = client.Configuration()
    configuration.connection_pool_maxsize = max(
        connections, configuration.connection_pool_maxsize or 0
    )
    try:
        if kubeconfig:
            return config.new_client_from_config(
                config_file=kubeconfig, client_configuration=configuration
            )
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration)
        # read now, not when the kubernetes package was imported
        return config.new_client_from_config(
            config_file=os.environ.get("KUBECONFIG") or "~/.kube/config",
            client_configuration=configuration,
        )
    except (config.ConfigException, OSError, ValueError) as err:
        raise ConfigError(f"no Kubernetes credentials: {err}") from None


class Kube:
    """Typed, minimal access to the API server; ``timeout`` bounds each request (seconds)."""

    def __init__(
        self, api: Any, field_manager: str = FIELD_MANAGER, timeout: float = TIMEOUT_SECONDS
    ) -> None:
        self.api: Any = api
        self.field_manager = field_manager
        self.timeout = timeout

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
    ) -> dict[str, Any] | None:
        """One HTTP call; returns the decoded body, or None on 404."""
        headers = {"Accept": accept, "Content-Type": content_type}
        try:
            method, url, headers, body, post = self.api.param_serialize(
                method,
                path,
                query_params=query or [],
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response: Any = self.api.call_api(
                method, url, headers, body, post, _request_timeout=self.timeout
            )
            response.read()
        except (urllib3.exceptions.HTTPError, OSError, client.ApiException) as err:
            raise KubeRetryable(f"{method} {path}: {err}") from err
        status = response.status
        text = response.data.decode("utf-8", "replace") if response.data else ""
        if status == 404:
            return None
        if 200 <= status < 300:
            decoded: dict[str, Any] = json.loads(text) if text else {}
            return decoded
        raise classify(status, text, f"{method} {path}")

    def get_json(self, path: str) -> dict[str, Any] | None:
        """A JSON document of the API server outside the resource paths (e.g. the
        ``/.well-known/openid-configuration`` of its ServiceAccount issuer), or None (404)."""
        return self._request("GET", path)

    def observed(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        """The object as last observed, for reading its status (a client with a watch cache
        may answer from it, one event behind the apiserver at most); here: :meth:`get`."""
        return self.get(resource, namespace, name)

    def get(
        self, resource: Resource, namespace: str, name: str, sub: str | None = None
    ) -> dict[str, Any] | None:
        """The object (read through subresource ``sub``, e.g. ``status``), or None when it does
        not exist."""
        return self._request("GET", resource.path(namespace, name, sub))

    def owned(
        self, resource: Resource, namespace: str, label_selector: str, owner_uid: str
    ) -> list[dict[str, Any]]:
        """The objects of ``namespace`` that ``label_selector`` selects and an ownerReference
        ties to ``owner_uid`` (the children an owner may prune)."""
        return [
            obj
            for obj in self.list(resource, namespace, label_selector)
            if any(r.get("uid") == owner_uid for r in obj["metadata"].get("ownerReferences") or [])
        ]

    def list_naming(self, resource: Resource, namespace: str, agent: str) -> list[dict[str, Any]]:
        """The objects of ``namespace`` whose ``spec.agentRef.name`` is ``agent`` (ToolBindings,
        EvalSchedules); a client with a watch cache may answer from an index."""
        return [
            obj
            for obj in self.list(resource, namespace)
            if ((obj.get("spec") or {}).get("agentRef") or {}).get("name") == agent
        ]

    def list(
        self, resource: Resource, namespace: str | None, label_selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Objects of a namespace (None: of all), optionally filtered by a label selector."""
        query = [("labelSelector", label_selector)] if label_selector else []
        found = self._request("GET", resource.path(namespace), query=query)
        items: list[dict[str, Any]] = (found or {}).get("items", [])
        return items

    def apply(self, manifest: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply ``manifest`` under the operator's field manager."""
        if APPLY_DELAY_SECONDS:
            time.sleep(APPLY_DELAY_SECONDS)
        meta = manifest["metadata"]
        path = resource_of(manifest).path(meta["namespace"], meta["name"])
        query = [("fieldManager", self.field_manager), ("force", "true")]
        result = self._request(
            "PATCH", path, query=query, body=manifest, content_type="application/apply-patch+yaml"
        )
        if result is None:  # the namespace itself is gone
            raise KubeRetryable(f"apply {path}: namespace not found")
        return result

    def merge_patch(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        """JSON-merge-patch ``manifest`` onto the live object under the operator's field manager:
        unlike an apply, every list the manifest holds replaces the live one whole (entries other
        managers added are dropped). None when the object does not exist."""
        meta = manifest["metadata"]
        path = resource_of(manifest).path(meta["namespace"], meta["name"])
        return self._request(
            "PATCH",
            path,
            query=[("fieldManager", self.field_manager)],
            body=manifest,
            content_type="application/merge-patch+json",
        )

    def delete(self, resource: Resource, namespace: str, name: str, uid: str | None = None) -> None:
        """Delete an object (background propagation); absent objects are fine."""
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        self._request("DELETE", resource.path(namespace, name), body=body)

    def serves(self, resource: Resource) -> bool:
        """Whether the API server serves ``resource`` (False when, e.g., its CRD is absent)."""
        found = self._request("GET", f"/apis/{resource.api_version}")
        return any(r.get("name") == resource.plural for r in (found or {}).get("resources", []))

    def patch_status(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        status: dict[str, Any],
        resource_version: str | None = None,
    ) -> dict[str, Any] | None:
        """Merge-patch the status subresource (keys set to None are removed); the object as
        written, None when it is gone. With ``resource_version``, only if the object is still
        at that version (else :class:`KubeConflict`)."""
        body: dict[str, Any] = {"status": status}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        return self._request(
            "PATCH",
            resource.path(namespace, name, "status"),
            body=body,
            content_type="application/merge-patch+json",
        )

    def create(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        """Create an object (Events, Leases); :class:`KubeConflict` when the name is taken."""
        path = resource_of(manifest).path(manifest["metadata"]["namespace"])
        return self._request("POST", path, body=manifest)

    def replace(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        """PUT the whole object; with its ``metadata.resourceVersion`` it succeeds only if nobody
        wrote since that read (else :class:`KubeConflict`). None when the object is gone."""
        meta = manifest["metadata"]
        path = resource_of(manifest).path(meta["namespace"], meta["name"])
        return self._request("PUT", path, body=manifest)


__all__ = [
    "AGENT_DEPLOYMENT",
    "CONFIG_MAP",
    "CRON_JOB",
    "DEPLOYMENT",
    "EVAL_SCHEDULE",
    "EVENT",
    "FIELD_MANAGER",
    "HORIZONTAL_POD_AUTOSCALER",
    "LEASE",
    "NETWORK_POLICY",
    "POD",
    "POD_DISRUPTION_BUDGET",
    "PROMETHEUS_RULE",
    "ROLE",
    "ROLE_BINDING",
    "SCALED_OBJECT",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "TOOL_BINDING",
    "Kube",
    "Resource",
    "new_api_client",
    "resource_of",
]
