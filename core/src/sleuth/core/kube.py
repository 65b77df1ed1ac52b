"""The one Kubernetes client of every sleuth package, with one policy for its errors.

- 404: reads return ``None``, deletes succeed (the object is already gone).
- 409: :class:`KubeConflict` (retryable). Server-side apply uses ``force``, so it does not
  conflict with other field managers; only plain writes can.
- 429, 5xx, timeouts, connection errors: :class:`KubeRetryable`.
- Any other 4xx: :class:`KubeRejected` (permanent), with the apiserver's message.

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

from sleuth.core.errors import KubeConflict, KubeRejected, KubeRetryable

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


AGENT_DEPLOYMENT = Resource("sleuth.dev/v1alpha1", "AgentDeployment", "agentdeployments")
TOOL_BINDING = Resource("sleuth.dev/v1alpha1", "ToolBinding", "toolbindings")
DEPLOYMENT = Resource("apps/v1", "Deployment", "deployments")
SERVICE = Resource("v1", "Service", "services")
CONFIG_MAP = Resource("v1", "ConfigMap", "configmaps")
SECRET = Resource("v1", "Secret", "secrets")
EVENT = Resource("v1", "Event", "events")
NETWORK_POLICY = Resource("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies")
EVAL_SCHEDULE = Resource("sleuth.dev/v1alpha1", "EvalSchedule", "evalschedules")
CRON_JOB = Resource("batch/v1", "CronJob", "cronjobs")
PROMETHEUS_RULE = Resource("monitoring.coreos.com/v1", "PrometheusRule", "prometheusrules")
SERVICE_ACCOUNT = Resource("v1", "ServiceAccount", "serviceaccounts")
ROLE = Resource("rbac.authorization.k8s.io/v1", "Role", "roles")
ROLE_BINDING = Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings")

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
    )
}


def resource_of(manifest: dict[str, Any]) -> Resource:
    """The resource a manifest belongs to."""
    return RESOURCES[(manifest["apiVersion"], manifest["kind"])]


def new_api_client(kubeconfig: str | None = None) -> Any:
    """An API client from a kubeconfig file (or $KUBECONFIG), else the in-cluster config."""
    try:
        return config.new_client_from_config(config_file=kubeconfig)
    except config.ConfigException:
        config.load_incluster_config()
        return client.ApiClient()


class Kube:
    """Typed, minimal access to the API server for the reconcilers."""

    def __init__(self, api: Any, field_manager: str = FIELD_MANAGER) -> None:
        self.api: Any = api
        self.field_manager = field_manager

    def _request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any] | None:
        """One HTTP call; returns the decoded body, or None on 404."""
        headers = {"Accept": "application/json", "Content-Type": content_type}
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
                method, url, headers, body, post, _request_timeout=TIMEOUT_SECONDS
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
        message = _message(text)
        if status == 409:
            raise KubeConflict(f"{method} {path}: {message}")
        if status == 429 or status >= 500:
            raise KubeRetryable(f"{method} {path}: HTTP {status}: {message}")
        raise KubeRejected(status, f"{method} {path}: {message}")

    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist."""
        return self._request("GET", resource.path(namespace, name))

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
        self, resource: Resource, namespace: str, name: str, status: dict[str, Any]
    ) -> None:
        """Merge-patch the status subresource (keys set to None are removed)."""
        self._request(
            "PATCH",
            resource.path(namespace, name, "status"),
            body={"status": status},
            content_type="application/merge-patch+json",
        )

    def create(self, manifest: dict[str, Any]) -> dict[str, Any] | None:
        """Create an object (used for Events)."""
        path = resource_of(manifest).path(manifest["metadata"]["namespace"])
        return self._request("POST", path, body=manifest)


def _message(text: str) -> str:
    try:
        decoded = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(decoded, dict):
        return str(decoded.get("message", text[:500]))
    return text[:500]


__all__ = [
    "AGENT_DEPLOYMENT",
    "CONFIG_MAP",
    "DEPLOYMENT",
    "EVENT",
    "FIELD_MANAGER",
    "NETWORK_POLICY",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "TOOL_BINDING",
    "Kube",
    "Resource",
    "new_api_client",
    "resource_of",
]
