"""``sleuth operator``: run the kopf operator (on a host with a kubeconfig, or in a cluster)."""

from __future__ import annotations

import argparse
import os
from typing import Any


def _run(args: argparse.Namespace) -> int:
    if args.kubeconfig:  # read by sleuth.operator.handlers; first in sleuth.core.kube's order
        os.environ["SLEUTH_OPERATOR_KUBECONFIG"] = args.kubeconfig
    if args.image:
        os.environ["SLEUTH_IMAGE"] = args.image
    if args.workload_placement:
        from sleuth.operator.handlers import workload_placement

        try:
            workload_placement(args.workload_placement)
        except (ValueError, AttributeError, TypeError) as err:
            raise SystemExit(
                f"sleuth operator: --workload-placement: not valid JSON: {err}"
            ) from None
        os.environ["SLEUTH_WORKLOAD_PLACEMENT"] = args.workload_placement
    if args.model_image:
        os.environ["SLEUTH_MODEL_IMAGE"] = args.model_image
    from sleuth.operator.render.tracing import TracingDefaults

    try:
        tracing = TracingDefaults(
            args.tracing_endpoint, args.tracing_sampling_ratio, args.tracing_capture_content
        )
    except ValueError as err:
        raise SystemExit(f"sleuth operator: --tracing-*: {err}") from None
    os.environ["SLEUTH_TRACING"] = tracing.to_text()
    os.environ["SLEUTH_RESYNC_SECONDS"] = str(args.resync_seconds)
    os.environ["SLEUTH_NAMESPACES"] = ",".join(args.namespace or [])
    if args.metrics_port:
        from sleuth.operator.metrics import serve

        serve(args.metrics_port)
    import kopf
    from kopf._core.engines.peering import Identity  # a NewType of str, not re-exported

    import sleuth.operator.handlers  # noqa: F401  (registers the handlers)
    from sleuth.operator.leader import default_identity, lead

    kopf.configure(verbose=args.verbose)
    # kopf's own default identity asks getpass.getuser(), which raises KeyError for a uid without
    # a passwd entry (the image's 65532 in a pod with no USER/LOGNAME): name ourselves instead.
    identity = default_identity()
    if args.leader_election_lease:
        lead(
            args.leader_election_lease,
            args.leader_election_namespace,
            args.liveness,
            args.kubeconfig,
        )
    namespaces = args.namespace or []
    if namespaces:
        from sleuth.operator.scope import restrict_to_namespaces

        restrict_to_namespaces()
    kopf.run(
        identity=Identity(identity),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=args.liveness or None,
    )
    return 0


def register(subparsers: Any) -> None:
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
        "--resync-seconds",
        type=float,
        default=30.0,
        help="period of the level-based resync of every object (default 30)",
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
    parser.add_argument("--verbose", action="store_true", help="log every reconcile")
    parser.set_defaults(func=_run)
