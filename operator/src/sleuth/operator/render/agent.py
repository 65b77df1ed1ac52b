"""The agent service of an AgentDeployment: ConfigMap (its configuration file), Deployment, Service.

The ConfigMap holds exactly :class:`sleuth.core.api.agent_config.AgentConfig`, the file the agent
reads
from ``SLEUTH_AGENT_CONFIG``; its digest is a pod-template annotation, so a change rolls the pods.
``SLEUTH_AGENT_NAME`` is the AgentDeployment's name: the ``agent`` label of the agent's metrics
(the online evaluation's ``rag_*_score{agent, source="online"}`` included).

Answer relevancy needs embeddings; unless ``spec.agent.onlineEval.embeddings`` chooses them, they
come from the agent's retrieval (:func:`retrieval_embedding`), else the local MiniLM the image
carries: a chat-model server, the default judge, serves no ``/embeddings``.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml
from pydantic import AnyHttpUrl

from sleuth.core.api.agent_config import (
    A2AConfig,
    AgentConfig,
    ModelEndpointConfig,
    OnlineEvalConfig,
    OnlineEvalEmbeddingsConfig,
    OnlineEvalJudgeConfig,
    ToolConfig,
)
from sleuth.core.api.v1alpha1.agent import A2ASpec
from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.onlineeval import OnlineEvalSettings, OnlineEvalSpec
from sleuth.core.api.v1alpha1.parsers import SINGLE_CALL_PARSERS
from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.api.v1alpha1.vectorsearch import EmbeddingSpec
from sleuth.operator.render.access import access_config, access_volumes
from sleuth.operator.render.autoscale import agent_replicas, agent_scaler, model_scaled
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
from sleuth.operator.render.model import model_endpoint
from sleuth.operator.render.tool import tool_description, tool_endpoint
from sleuth.operator.render.tracing import agent_trace_service, effective_tracing, tracing_env

CONFIG_DIR = "/etc/sleuth/agent"
CONFIG_FILE = "config.yaml"
MODEL_API_KEY_ENV = "SLEUTH_MODEL_API_KEY"
JUDGE_API_KEY_ENV = "SLEUTH_ONLINE_EVAL_JUDGE_API_KEY"


@dataclass(frozen=True)
class Binding:
    """A ToolBinding bound to the agent being rendered: its name and validated spec."""

    name: str
    spec: ToolBindingSpec


def agent_name(owner: Owner) -> str:
    """Name of the agent's Deployment, Service and ConfigMap."""
    return f"{owner.name}-agent"


def agent_endpoint(owner: Owner, settings: RenderSettings) -> str:
    """Base URL of the agent's OpenAI-compatible API."""
    return service_url(agent_name(owner), owner.namespace, settings.agent_port, "/v1")


def agent_base_url(owner: Owner, settings: RenderSettings) -> str:
    """The agent Service's base URL (the A2A card names ``<it>/a2a``)."""
    return service_url(agent_name(owner), owner.namespace, settings.agent_port)


def agent_card_url(owner: Owner, spec: AgentDeploymentSpec, settings: RenderSettings) -> str | None:
    """URL of the agent's A2A card, None when A2A is off."""
    if not spec.agent.a2a.enabled:
        return None
    return agent_base_url(owner, settings) + "/.well-known/agent-card.json"


def retrieval_embedding(bindings: list[Binding]) -> EmbeddingSpec | None:
    """The embeddings endpoint of the agent's retrieval, the default for answer relevancy.

    That of the first vector_search binding naming one (``spec.vectorSearch.embedding``) that
    needs no API key: a tool's credentials live only in its tool service, never in the agent or
    the eval pods, so an endpoint behind a key is not shared. ``bindings`` come oldest first, as
    :func:`~sleuth.operator.bindings.bindings_for` returns them (the oldest binding also
    wins a tool-name clash). None without one.
    """
    for b in bindings:
        vs = b.spec.vector_search
        if b.spec.type != "vector_search" or vs is None or vs.embedding is None:
            continue
        if vs.embedding.api_key_secret_ref is None:
            return vs.embedding
    return None


def _embeddings_config(
    online: OnlineEvalSpec, retrieval: EmbeddingSpec | None
) -> OnlineEvalEmbeddingsConfig:
    emb = online.embeddings
    if emb is not None:  # the user's choice
        return OnlineEvalEmbeddingsConfig(
            source=emb.source,
            endpoint=AnyHttpUrl(emb.endpoint) if emb.endpoint else None,
            model=emb.model,
        )
    if retrieval is not None:
        return OnlineEvalEmbeddingsConfig(
            source="endpoint",
            endpoint=AnyHttpUrl(retrieval.endpoint),
            model=retrieval.model,
        )
    # Retrieval embeds in-process (the tool service's local MiniLM): so does answer relevancy.
    return OnlineEvalEmbeddingsConfig(source="local")


def online_eval_config(
    online: OnlineEvalSpec, retrieval: EmbeddingSpec | None = None
) -> OnlineEvalConfig:
    """``onlineEval`` of the file; without a judge the agent asks its own model server.

    Embeddings: the user's choice, else ``retrieval`` (see :func:`retrieval_embedding`), else
    the local all-MiniLM-L6-v2 the image carries (a chat model's server has no ``/embeddings``).
    """
    judge = online.judge
    settings = {name: getattr(online, name) for name in OnlineEvalSettings.model_fields}
    return OnlineEvalConfig(
        **settings,
        judge=OnlineEvalJudgeConfig(
            endpoint=AnyHttpUrl(judge.endpoint),
            model=judge.model,
            api_key_env=JUDGE_API_KEY_ENV if judge.api_key_secret_ref else None,
        )
        if judge is not None
        else None,
        embeddings=_embeddings_config(online, retrieval),
    )


def agent_config(
    owner: Owner,
    spec: AgentDeploymentSpec,
    bindings: list[Binding],
    settings: RenderSettings,
    eval_schedules: list[str] | None = None,
) -> AgentConfig:
    """The agent's configuration file: model endpoint, tools in name order, limits, prompt,
    access (``eval_schedules``: the agent's EvalSchedules, whose Jobs it admits)."""
    agent = spec.agent
    parallel = agent.parallel_tool_calls
    if parallel is None:
        parallel = spec.model.effective_parser not in SINGLE_CALL_PARSERS
    tools = [
        ToolConfig(
            name=b.spec.tool_name,
            type=b.spec.type,
            description=tool_description(b.spec),
            endpoint=AnyHttpUrl(tool_endpoint(b.name, owner.namespace, settings)),
            timeout_seconds=b.spec.timeout_seconds,
            cache_ttl_seconds=b.spec.cache_ttl_seconds,
            approval=b.spec.approval,
        )
        for b in sorted(bindings, key=lambda b: (b.spec.tool_name, b.name))
    ]
    return AgentConfig(
        model=ModelEndpointConfig(
            endpoint=AnyHttpUrl(model_endpoint(owner, spec.model, settings)),
            served_model_name=spec.model.effective_served_name,
            timeout_seconds=min(agent.request_timeout_seconds, 600),
            api_key_env=MODEL_API_KEY_ENV if spec.model.api_key_secret_ref else None,
            # Known when the operator serves the model; an endpoint's own length is not.
            max_model_len=spec.model.effective_max_model_len if spec.model.serves else None,
            tool_calling=spec.model.tool_calling or "native",
            guided_format=spec.model.guided_format or "json_schema",
            wake_wait_seconds=_wake_wait(spec, settings),
        ),
        tools=tools,
        max_iterations=agent.max_iterations,
        parallel_tool_calls=parallel,
        system_prompt=agent.system_prompt,
        tool_cache_ttl_seconds=agent.tool_cache_ttl_seconds,
        request_timeout_seconds=agent.request_timeout_seconds,
        max_concurrent_requests=agent.max_concurrent_requests,
        online_eval=online_eval_config(agent.online_eval, retrieval_embedding(bindings)),
        limits=agent.limits,
        a2a=A2AConfig(
            **{name: getattr(agent.a2a, name) for name in A2ASpec.model_fields},
            public_url=AnyHttpUrl(agent_base_url(owner, settings)),
        ),
        access=access_config(owner, agent.access, eval_schedules or [], settings),
    )


def _wake_wait(spec: AgentDeploymentSpec, settings: RenderSettings) -> int | None:
    """How long a request waits for a model server that may sleep at zero; None when it never
    sleeps (not autoscaled, or no KEDA to scale it)."""
    scaling = spec.model.autoscaling
    if scaling is None or not model_scaled(spec.model, settings) or scaling.min_replicas > 0:
        return None
    return scaling.wake_wait_seconds


def render_agent(
    owner: Owner,
    spec: AgentDeploymentSpec,
    bindings: list[Binding],
    settings: RenderSettings,
    eval_schedules: list[str] | None = None,
) -> list[Manifest]:
    """ConfigMap + Deployment + Service of the agent service."""
    name = agent_name(owner)
    config = agent_config(owner, spec, bindings, settings, eval_schedules).to_file_dict()
    data = {CONFIG_FILE: yaml.safe_dump(config, sort_keys=True, allow_unicode=True)}
    selector = selector_labels("agent", owner.name)
    env: list[Manifest] = [
        {"name": "SLEUTH_AGENT_CONFIG", "value": f"{CONFIG_DIR}/{CONFIG_FILE}"},
        {"name": "SLEUTH_AGENT_NAME", "value": owner.name},
    ]
    if spec.model.api_key_secret_ref is not None:
        ref = spec.model.api_key_secret_ref
        env.append(secret_env(MODEL_API_KEY_ENV, ref.name, ref.key))
    judge = spec.agent.online_eval.judge
    if judge is not None and judge.api_key_secret_ref is not None:
        ref = judge.api_key_secret_ref
        env.append(secret_env(JUDGE_API_KEY_ENV, ref.name, ref.key))
    tracing = effective_tracing(spec.agent.tracing, settings.tracing)
    env += tracing_env(tracing, agent_trace_service(owner.name), owner.namespace, messages=True)
    access_vols, access_mounts = access_volumes(spec.agent.access)
    container: Manifest = {
        "name": "agent",
        "image": spec.agent.image or settings.sleuth_image,
        "args": [
            "agent",
            "--config",
            f"{CONFIG_DIR}/{CONFIG_FILE}",
            "--port",
            str(settings.agent_port),
        ],
        "ports": [{"name": "http", "containerPort": settings.agent_port, "protocol": "TCP"}],
        "env": env,
        "resources": resources(spec.agent.resources),
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
            *access_mounts,
        ],
        **sleuth_probes(),
        "securityContext": hardened_container(),
    }
    configmap: Manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(name, owner, "agent", owner.name),
        "data": data,
    }
    deployment, service = configured_workload(
        name,
        metadata(name, owner, "agent", owner.name),
        replicas=agent_replicas(spec),
        selector=selector,
        pod_labels=metadata(name, owner, "agent", owner.name)["labels"],
        config_data=data,
        container=container,
        port=settings.agent_port,
        settings=settings,
        in_flight_seconds=spec.agent.request_timeout_seconds,
    )
    deployment["spec"]["template"]["spec"]["volumes"].extend(access_vols)
    children = [configmap, deployment, service, *agent_scaler(owner, spec, name, settings)]
    scaling = spec.agent.autoscaling
    most = spec.agent.replicas if scaling is None else scaling.max_replicas
    if most > 1:
        # Voluntary disruptions (a node drain) take at most one agent pod at a time.
        children.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": metadata(name, owner, "agent", owner.name),
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector}},
            }
        )
    return children


__all__ = [
    "Binding",
    "agent_base_url",
    "agent_card_url",
    "agent_config",
    "agent_endpoint",
    "agent_name",
    "online_eval_config",
    "render_agent",
    "retrieval_embedding",
]
