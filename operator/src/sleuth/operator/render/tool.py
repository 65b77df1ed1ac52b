"""A ToolBinding's tool service: NetworkPolicy + ConfigMap + Deployment + Service.

The NetworkPolicy (:func:`~sleuth.operator.render.netpol.tool_network_policy`) admits calls from
the binding's agent only, and lets the service reach DNS, its backend and the tracing endpoint.

The service runs ``sleuth tool-service --config /etc/sleuth/tool/config.yaml --port 8080``. The
config file is the ToolBinding's spec (parse it with
:class:`sleuth.core.api.v1alpha1.ToolBindingSpec`)
with ``name`` and ``description`` filled in. Credentials reach this pod only, as environment
variables read from the referenced Secret keys (names in :data:`SECRET_ENV`); the agent never
sees them.
"""

from __future__ import annotations

from typing import Any

import yaml

from sleuth.core.api.v1alpha1.common import SecretKeyRef
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.tracing import TracingSpec
from sleuth.core.api.v1alpha1.vectorsearch import EMBEDDED_QDRANT_MOUNT
from sleuth.core.tools import default_description, sql_description_for
from sleuth.operator.render.meta import (
    Manifest,
    Owner,
    RenderSettings,
    configured_workload,
    hardened_container,
    metadata,
    resources,
    secret_env,
    selector_labels,
    service_url,
    sleuth_probes,
)
from sleuth.operator.render.netpol import tool_network_policy
from sleuth.operator.render.tracing import effective_tracing, tool_trace_service, tracing_env

CONFIG_DIR = "/etc/sleuth/tool"
CONFIG_FILE = "config.yaml"

# Environment variable → what it holds, set from the ToolBinding's Secret references.
SECRET_ENV = {
    "SLEUTH_SQL_CONNECTION_URI": "sqlQuery.connectionSecretRef",
    "SLEUTH_QDRANT_API_KEY": "vectorSearch.apiKeySecretRef",
    "SLEUTH_EMBEDDING_API_KEY": "vectorSearch.embedding.apiKeySecretRef",
    "SLEUTH_RERANKER_API_KEY": "vectorSearch.reranker.apiKeySecretRef",
    "SLEUTH_WEB_SEARCH_API_KEY": "webSearch.apiKeySecretRef",
}


def tool_service_name(binding: str) -> str:
    """Name of a ToolBinding's Deployment, Service, ConfigMap and NetworkPolicy."""
    return f"{binding}-tool"


def tool_endpoint(binding: str, namespace: str, settings: RenderSettings) -> str:
    """Base URL of the tool service, as the agent reaches it."""
    return service_url(tool_service_name(binding), namespace, settings.tool_port)


def tool_description(spec: ToolBindingSpec) -> str:
    """The description the model reads: the override, or the type's default with NOT-for."""
    if spec.description:
        return spec.description
    if spec.sql_query is not None:
        return sql_description_for(list(spec.sql_query.allowed_tables))
    return default_description(spec.type)


def secret_refs(spec: ToolBindingSpec) -> dict[str, SecretKeyRef]:
    """Environment variable → the Secret key it is read from, for the refs this spec sets."""
    refs: dict[str, SecretKeyRef | None] = {
        "SLEUTH_SQL_CONNECTION_URI": spec.sql_query.connection_secret_ref
        if spec.sql_query
        else None,
        "SLEUTH_QDRANT_API_KEY": spec.vector_search.api_key_secret_ref
        if spec.vector_search
        else None,
        "SLEUTH_EMBEDDING_API_KEY": spec.vector_search.embedding.api_key_secret_ref
        if spec.vector_search and spec.vector_search.embedding
        else None,
        "SLEUTH_RERANKER_API_KEY": spec.vector_search.reranker.api_key_secret_ref
        if spec.vector_search and spec.vector_search.reranker
        else None,
        "SLEUTH_WEB_SEARCH_API_KEY": spec.web_search.api_key_secret_ref
        if spec.web_search
        else None,
    }
    return {env: ref for env, ref in refs.items() if ref is not None}


def tool_config(spec: ToolBindingSpec) -> dict[str, Any]:
    """The tool service's configuration file (camelCase, the spec's own shape)."""
    config = spec.to_wire()
    config["name"] = spec.tool_name
    config["description"] = tool_description(spec)
    # approval: the agent's business (a decision is taken before the call reaches the service)
    for unused in ("replicas", "image", "resources", "approval"):
        config.pop(unused, None)
    return config


def render_tool(
    owner: Owner,
    spec: ToolBindingSpec,
    settings: RenderSettings,
    tracing: TracingSpec | None = None,
) -> list[Manifest]:
    """Every object of one ToolBinding's tool service.

    ``tracing``: the agent's ``spec.agent.tracing`` (the tool service traces as its agent does),
    over the operator's default.
    """
    name = tool_service_name(owner.name)
    agent = spec.agent_ref.name
    config_text = yaml.safe_dump(tool_config(spec), sort_keys=True, allow_unicode=True)
    selector = selector_labels("tool", owner.name)
    pod_labels = metadata(name, owner, "tool", agent)["labels"]
    configmap: Manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, owner, "tool", agent),
        "data": {CONFIG_FILE: config_text},
    }
    env = [{"name": "SLEUTH_TOOL_CONFIG", "value": f"{CONFIG_DIR}/{CONFIG_FILE}"}]
    env += [secret_env(var, ref.name, ref.key) for var, ref in secret_refs(spec).items()]
    effective = effective_tracing(tracing, settings.tracing)
    env += tracing_env(effective, tool_trace_service(owner.name), owner.namespace, messages=False)
    container: Manifest = {
        "name": "tool",
        "image": spec.image or settings.sleuth_image,
        "args": [
            "tool-service",
            "--config",
            f"{CONFIG_DIR}/{CONFIG_FILE}",
            "--port",
            str(settings.tool_port),
        ],
        "ports": [{"name": "http", "containerPort": settings.tool_port, "protocol": "TCP"}],
        "env": env,
        "resources": resources(spec.resources),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
        **sleuth_probes(),
        "securityContext": hardened_container(),
    }
    embedded = spec.vector_search.embedded if spec.vector_search else None
    if embedded is not None:
        container["volumeMounts"].append({"name": "qdrant", "mountPath": EMBEDDED_QDRANT_MOUNT})
    deployment, service = configured_workload(
        name,
        metadata(name, owner, "tool", agent),
        replicas=spec.replicas,
        selector=selector,
        pod_labels=pod_labels,
        config_data=configmap["data"],
        container=container,
        port=settings.tool_port,
        settings=settings,
        in_flight_seconds=spec.timeout_seconds,
    )
    if embedded is not None:
        pod = deployment["spec"]["template"]["spec"]
        pod["volumes"].append(
            {"name": "qdrant", "persistentVolumeClaim": {"claimName": embedded.claim_name}}
        )
        # One process at a time may open the store: never two pods during a rollout.
        deployment["spec"]["strategy"] = {"type": "Recreate"}
    policy = tool_network_policy(name, owner, spec, settings, effective)
    return [policy, configmap, deployment, service]


__all__ = [
    "SECRET_ENV",
    "render_tool",
    "secret_refs",
    "tool_config",
    "tool_description",
    "tool_endpoint",
    "tool_service_name",
]
