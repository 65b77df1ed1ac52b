"""``sleuth operator``: run the kopf operator (on a host with a kubeconfig, or in a cluster).

This is the operator's one edge: the arguments (and, for the images and the runbook links, the
environment variables the chart sets) become one :class:`~sleuth.operator.runtime.LoopSettings`,
from which one :class:`~sleuth.operator.runtime.Runtime` is built and handed to kopf as ``memo``.
Nothing below reads ``os.environ`` for configuration.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when the operator runs, not on every `sleuth` command
    from sleuth.operator.render.meta import RenderSettings
    from sleuth.operator.runtime import LoopSettings


def settings_from_env(
    environ: Mapping[str, str] = os.environ, placement: str = ""
) -> RenderSettings:
    """Images from ``SLEUTH_IMAGE`` (sleuth) and ``SLEUTH_MODEL_IMAGE`` (vLLM), the runbook links
    of the rendered alerts from ``SLEUTH_RUNBOOK_BASE_URL``, when set; ``placement`` as
    :func:`workload_placement` reads it."""
    from sleuth.operator.render.meta import RenderSettings

    defaults = RenderSettings()
    return dataclasses.replace(
        defaults,
        sleuth_image=environ.get("SLEUTH_IMAGE") or defaults.sleuth_image,
        model_image=environ.get("SLEUTH_MODEL_IMAGE") or defaults.model_image,
        runbook_base_url=environ.get("SLEUTH_RUNBOOK_BASE_URL") or defaults.runbook_base_url,
        **workload_placement(placement),
    )


def workload_placement(text: str) -> dict[str, Any]:
    """``--workload-placement`` JSON (``{"nodeSelector": {...}, "tolerations": [...]}``) as
    RenderSettings fields; empty text: none."""
    if not text:
        return {}
    placement = json.loads(text)
    return {
        "workload_node_selector": {
            str(k): str(v) for k, v in placement.get("nodeSelector", {}).items()
        },
        "workload_tolerations": list(placement.get("tolerations", [])),
    }


def loop_settings(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> LoopSettings:
    """The runtime's settings from the parsed arguments (flags win over the environment)."""
    from sleuth.operator.runtime import LoopSettings
    from sleuth.operator.workqueue import Backoff

    env = dict(environ)
    if args.image:
        env["SLEUTH_IMAGE"] = args.image
    if args.model_image:
        env["SLEUTH_MODEL_IMAGE"] = args.model_image
    try:
        render = settings_from_env(env, args.workload_placement or "")
    except (ValueError, AttributeError, TypeError) as err:
        raise SystemExit(f"sleuth operator: --workload-placement: not valid JSON: {err}") from None
    if args.workers < 1:
        raise SystemExit("sleuth operator: --workers: must be at least 1")
    from sleuth.operator.render.tracing import TracingDefaults

    try:
        tracing = TracingDefaults(
            args.tracing_endpoint, args.tracing_sampling_ratio, args.tracing_capture_content
        )
    except ValueError as err:
        raise SystemExit(f"sleuth operator: --tracing-*: {err}") from None
    render = dataclasses.replace(render, tracing=tracing, **allowlist_settings(args))
    return LoopSettings(
        kubeconfig=args.kubeconfig or None,
        namespaces=tuple(args.namespace or ()),
        resync_seconds=args.resync_seconds,
        workers=args.workers,
        shutdown_seconds=args.shutdown_seconds,
        backoff=Backoff(base=args.backoff_base_seconds, cap=args.backoff_max_seconds),
        render=render,
    )


def _entries(text: str) -> tuple[str, ...]:
    return tuple(e.strip() for e in text.split(",") if e.strip())


def allowlist_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``--allowed-hosts``, ``--allowed-image-repositories`` and ``--cluster-domain`` as
    RenderSettings fields; a malformed entry ends the operator with a message naming it."""
    from sleuth.core.api.v1alpha1.allowlists import Allowlists

    try:
        allow = Allowlists(
            hosts=_entries(args.allowed_hosts),
            repositories=_entries(args.allowed_image_repositories),
            cluster_domain=args.cluster_domain,
        )
    except ValueError as err:
        raise SystemExit(f"sleuth operator: --allowed-*: {err}") from None
    return {"allowlists": allow, "cluster_domain": args.cluster_domain}


def _run(args: argparse.Namespace) -> int:
    import kopf
    from kopf._core.engines.peering import Identity  # a NewType of str, not re-exported

    import sleuth.operator.handlers  # noqa: F401  (registers the handlers)
    from sleuth.operator.leader import default_identity, lead
    from sleuth.operator.runtime import Runtime

    runtime = Runtime.build(loop_settings(args))
    if args.metrics_port:
        from sleuth.operator.metrics import serve

        serve(args.metrics_port)
    kopf.configure(verbose=args.verbose)
    if not args.verbose:  # kopf logs a line per watch event (17,000 children at 1,000 agents)
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    # kopf's own default identity asks getpass.getuser(), which raises KeyError for a uid without
    # a passwd entry (the image's 65532 in a pod with no USER/LOGNAME): name ourselves instead.
    identity = default_identity(os.environ.get("POD_NAME"))
    if args.leader_election_lease:
        lead(
            args.leader_election_lease,
            args.leader_election_namespace or os.environ.get("POD_NAMESPACE"),
            args.liveness,
            args.kubeconfig,
        )
    namespaces = list(runtime.settings.namespaces)
    if namespaces:
        from sleuth.operator.scope import restrict_to_namespaces

        restrict_to_namespaces()
    kopf.run(
        identity=Identity(identity),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=args.liveness or None,
        memo=kopf.Memo(runtime=runtime),
    )
    return 0


def register(subparsers: Any) -> None:
    from sleuth.core.api.v1alpha1.allowlists import OFFICIAL_VLLM_REPOSITORIES

    parser = subparsers.add_parser(
        "operator", help="run the operator that reconciles AgentDeployments and ToolBindings"
    )
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: in-cluster when KUBERNETES_SERVICE_HOST is set, else "
        "$KUBECONFIG or ~/.kube/config)",
    )
    parser.add_argument(
        "--namespace",
        action="append",
        help="watch only this namespace (repeatable); default: the whole cluster",
    )
    parser.add_argument(
        "--image", help="sleuth image for agent and tool pods (default: the pinned release)"
    )
    parser.add_argument(
        "--model-image",
        help="vLLM image for model servers whose spec.model.image is empty "
        "(default: $SLEUTH_MODEL_IMAGE, else the pinned vLLM release)",
    )
    parser.add_argument(
        "--workload-placement",
        help='JSON {"nodeSelector": {...}, "tolerations": [...]} for the pods of agents, tool '
        "services and eval jobs (vLLM pods keep their GPU placement)",
    )
    parser.add_argument(
        "--tracing-endpoint",
        default="",
        help="OTLP/HTTP base URL the agents and tool services export traces to, unless an "
        "AgentDeployment's spec.agent.tracing.endpoint names another (default: none, tracing off)",
    )
    parser.add_argument(
        "--tracing-sampling-ratio",
        type=float,
        default=1.0,
        help="fraction (0-1) of new traces recorded, unless spec.agent.tracing.samplingRatio "
        "says otherwise (default 1)",
    )
    parser.add_argument(
        "--tracing-capture-content",
        action="store_true",
        help="record prompt and completion text on spans, unless "
        "spec.agent.tracing.captureContent says otherwise (default: off)",
    )
    parser.add_argument(
        "--allowed-hosts",
        default="",
        help="comma-separated https://host or https://*.suffix entries (http:// to allow plain "
        "HTTP) that spec endpoints may name besides cluster Services "
        "(<service>.<namespace>.svc[.<cluster domain>]); default: none",
    )
    parser.add_argument(
        "--allowed-image-repositories",
        default=",".join(OFFICIAL_VLLM_REPOSITORIES),
        help="comma-separated image repositories (repo, or prefix/* for every repository below "
        "it) that spec images may come from, besides those of --image and --model-image "
        f"(default: {','.join(OFFICIAL_VLLM_REPOSITORIES)})",
    )
    parser.add_argument(
        "--cluster-domain",
        default="cluster.local",
        help="the cluster's DNS domain, of the Service URLs it renders and allows "
        "(default cluster.local)",
    )
    parser.add_argument(
        "--resync-seconds",
        type=float,
        default=300.0,
        help="period of the level-based resync of every object (default 300): a safety net "
        "for what no watch reports (a Secret, a pod that cannot be scheduled, a missed event); "
        "every child kind is watched, so drift is repaired at its event, not at the resync",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=16,
        help="reconciles that run at once, each on a different object (default 16)",
    )
    parser.add_argument(
        "--shutdown-seconds",
        type=float,
        default=10.0,
        help="on SIGTERM, how long the reconciles in flight may take to finish (default 10)",
    )
    parser.add_argument(
        "--backoff-base-seconds",
        type=float,
        default=0.5,
        help="first retry delay of an object whose reconcile failed; doubles per failure "
        "(default 0.5)",
    )
    parser.add_argument(
        "--backoff-max-seconds",
        type=float,
        default=60.0,
        help="longest retry delay of an object whose reconcile keeps failing (default 60)",
    )
    parser.add_argument(
        "--liveness", help="serve liveness at this URL, e.g. http://0.0.0.0:8080/healthz"
    )
    parser.add_argument(
        "--metrics-port", type=int, default=0, help="serve Prometheus /metrics on this port"
    )
    parser.add_argument(
        "--leader-election-lease",
        help="run only while holding this Lease (several replicas: one leads, others wait)",
    )
    parser.add_argument(
        "--leader-election-namespace", help="namespace of the Lease (default: $POD_NAMESPACE)"
    )
    parser.add_argument(
        "--verbose", action="store_true", help="log every reconcile and every watch event"
    )
    parser.set_defaults(func=_run)
