"""``sleuth operator``'s flags. The command's body is :mod:`sleuth.operator.main`.

Every ``sleuth`` command's module is imported to build ``sleuth --help``; this one holds the
flags only, so that listing the commands does not import kopf, the Kubernetes client and the
handlers (whose import registers them with kopf).
"""

from __future__ import annotations

import argparse
from typing import Any


def _run(args: argparse.Namespace) -> int:
    # Deferred on purpose: the body imports kopf, the Kubernetes client and the handlers, which
    # `sleuth --help` and the other commands must not load (see the module docstring).
    from sleuth.operator.main import run

    return run(args)


def register(subparsers: Any) -> None:
    from sleuth.core.api.v1alpha1.allowlists import OFFICIAL_VLLM_REPOSITORIES
    from sleuth.operator.render_command import add_api_server_flags, add_autoscaling_flags
    from sleuth.operator.settings import add_image_pull_flags

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
    add_image_pull_flags(parser)
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
        "--network-policy-metrics-from",
        default="",
        help="JSON list of NetworkPolicy peers admitted to the agent, model server and tool "
        "service ports besides their callers, for Prometheus (e.g. the monitoring namespace; "
        "default: none)",
    )
    parser.add_argument(
        "--prometheus-rule-label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="label every EvalSchedule's PrometheusRule with KEY=VALUE (repeatable), e.g. "
        "release=kube-prometheus-stack for a Prometheus whose ruleSelector wants it",
    )
    parser.add_argument(
        "--series-namespace-label",
        default="namespace",
        help="the label under which Prometheus keeps the EvalSchedule's namespace of the "
        "operator's series, which the EvalSchedules' alerts select on: namespace (scraped with "
        "honorLabels, the default) or exported_namespace (scraped without)",
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
    parser.add_argument(
        "--service-account-issuer",
        help="the cluster's ServiceAccount token issuer, whose tokens agents accept (default: "
        "read from the API server's /.well-known/openid-configuration at start)",
    )
    add_api_server_flags(parser)
    add_autoscaling_flags(parser)
    parser.set_defaults(func=_run)
