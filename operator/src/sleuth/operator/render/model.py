"""The vLLM model server of an AgentDeployment that serves its own model: Deployment + Service.

Locked down (the ``restricted`` Pod Security Standard): it runs as uid 65532 with a read-only
root filesystem, no capabilities, no privilege escalation and the runtime's default seccomp
profile. vLLM writes only below :data:`HOME` (its caches, the Hugging Face cache, torch's and
triton's kernel caches: ``HOME``, ``XDG_*``, ``HF_HOME`` and ``VLLM_CACHE_ROOT`` point there), to
``/tmp`` and to ``/dev/shm``: each is an emptyDir (the weight cache, ``spec.model.cache``, is
mounted at :data:`CACHE_PATH` inside it). ``USER`` is set because the uid has no passwd entry in
the image (``getpass.getuser()`` would raise), and usage statistics are not sent.

With ``spec.model.apiKeySecretRef`` the key is ``VLLM_API_KEY``: vLLM then refuses every API
request without it as a bearer token; the agent and the eval Jobs send the same Secret key.
"""

from __future__ import annotations

from sleuth.core.api.v1alpha1.model import ModelSpec
from sleuth.core.api.v1alpha1.serving import GPU_RESOURCE
from sleuth.operator.render.autoscale import model_replicas
from sleuth.operator.render.meta import (
    Manifest,
    Owner,
    RenderSettings,
    hardened_container,
    hardened_pod,
    http_probe,
    metadata,
    pull_images,
    resources,
    secret_env,
    selector_labels,
    service_url,
)

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
HOME = "/home/vllm"  # an emptyDir: every path vLLM writes besides /tmp and /dev/shm
CACHE_PATH = f"{HOME}/.cache/huggingface"
API_KEY_ENV = "VLLM_API_KEY"  # read by vLLM's server as its --api-key
# A 70B checkpoint can take many minutes to download and load: up to 30 minutes before liveness.
STARTUP_PERIOD_SECONDS = 10
STARTUP_FAILURES = 180


def model_name(owner: Owner) -> str:
    """Name of the model server's Deployment and Service."""
    return f"{owner.name}-model"


def model_endpoint(owner: Owner, spec: ModelSpec, settings: RenderSettings) -> str:
    """The OpenAI-compatible base URL the agent uses (ends in /v1)."""
    if spec.endpoint is not None:
        return spec.endpoint
    return service_url(model_name(owner), owner.namespace, settings.model_port, "/v1")


def vllm_args(spec: ModelSpec, settings: RenderSettings) -> list[str]:
    """The vLLM server's command-line arguments, in a fixed order."""
    assert spec.name is not None, "vllm_args needs a served model"
    args = [
        "--model",
        spec.name,
        "--served-model-name",
        spec.effective_served_name,
        "--tensor-parallel-size",
        str(spec.effective_tensor_parallel_size),
        "--max-model-len",
        str(spec.effective_max_model_len),
    ]
    if spec.quantization is not None:
        args += ["--quantization", spec.quantization]
    parser = spec.effective_parser
    if parser is not None:  # none only with guided tool calling (the spec model checks)
        args += ["--enable-auto-tool-choice", "--tool-call-parser", parser]
    args += [
        "--host",
        "0.0.0.0",
        "--port",
        str(settings.model_port),
    ]
    return args + list(spec.extra_args or [])


def render_model(owner: Owner, spec: ModelSpec, settings: RenderSettings) -> list[Manifest]:
    """Deployment + Service running vLLM on GPU nodes; empty when the model is an endpoint. The
    Deployment's replicas are left out when a scaler owns them (:func:`model_replicas`)."""
    if not spec.serves:
        return []
    name = model_name(owner)
    gpu = spec.effective_gpu
    volumes: list[Manifest] = [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        {"name": "home", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {}},
    ]
    mounts: list[Manifest] = [
        {"name": "dshm", "mountPath": "/dev/shm"},
        {"name": "home", "mountPath": HOME},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    if spec.cache is not None:
        if spec.cache.claim_name is not None:
            volumes.append(
                {"name": "cache", "persistentVolumeClaim": {"claimName": spec.cache.claim_name}}
            )
        else:
            volumes.append({"name": "cache", "emptyDir": {"sizeLimit": spec.cache.size}})
        mounts.append({"name": "cache", "mountPath": CACHE_PATH})
    env: list[Manifest] = [
        {"name": "HOME", "value": HOME},
        {"name": "USER", "value": "vllm"},
        {"name": "XDG_CACHE_HOME", "value": f"{HOME}/.cache"},
        {"name": "XDG_CONFIG_HOME", "value": f"{HOME}/.config"},
        {"name": "HF_HOME", "value": CACHE_PATH},
        {"name": "VLLM_CACHE_ROOT", "value": f"{HOME}/.cache/vllm"},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
    ]
    if spec.api_key_secret_ref is not None:
        ref = spec.api_key_secret_ref
        env.append(secret_env(API_KEY_ENV, ref.name, ref.key))
    if spec.token_secret_ref is not None:
        ref = spec.token_secret_ref
        env.append(secret_env("HF_TOKEN", ref.name, ref.key))
    container: Manifest = {
        "name": "vllm",
        "image": spec.image or settings.model_image,
        "args": vllm_args(spec, settings),
        "ports": [{"name": "http", "containerPort": settings.model_port, "protocol": "TCP"}],
        "env": env,
        "resources": resources(spec.resources, **{GPU_RESOURCE: gpu.count}),
        "volumeMounts": mounts,
        "startupProbe": http_probe("/health", "http", STARTUP_PERIOD_SECONDS, STARTUP_FAILURES),
        "readinessProbe": http_probe("/health", "http", 5, 3),
        "livenessProbe": http_probe("/health", "http", 10, 3, timeout=5),
        "securityContext": hardened_container(),
    }
    selector = selector_labels("model", owner.name)
    deployment: Manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(name, owner, "model", owner.name),
        "spec": {
            "selector": {"matchLabels": selector},
            # Never ask for more GPUs than the replicas hold: replace pods one at a time.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
            },
            "template": {
                "metadata": {"labels": metadata(name, owner, "model", owner.name)["labels"]},
                "spec": pull_images(
                    {
                        "automountServiceAccountToken": False,
                        "nodeSelector": {GPU_PRODUCT_LABEL: gpu.product},
                        "tolerations": [
                            {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}
                        ],
                        "securityContext": hardened_pod(),
                        "terminationGracePeriodSeconds": 60,
                        "containers": [container],
                        "volumes": volumes,
                    },
                    settings,
                ),
            },
        },
    }
    replicas = model_replicas(spec, settings)
    if replicas is not None:
        deployment["spec"] = {"replicas": replicas, **deployment["spec"]}
    service: Manifest = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, owner, "model", owner.name),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [
                {
                    "name": "http",
                    "port": settings.model_port,
                    "targetPort": "http",
                    "protocol": "TCP",
                }
            ],
        },
    }
    return [deployment, service]


__all__ = [
    "API_KEY_ENV",
    "CACHE_PATH",
    "HOME",
    "model_endpoint",
    "model_name",
    "render_model",
    "vllm_args",
]
