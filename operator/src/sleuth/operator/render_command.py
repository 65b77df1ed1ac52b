"""``sleuth render``'s flags. Every ``sleuth`` command's module is imported to build ``sleuth
--help``; this one holds the flags only, so that listing the commands does not import the
renderers and reconcilers (and through them the Kubernetes client): the body is
:mod:`sleuth.operator.rendercli`, imported when the command runs."""

from __future__ import annotations

import argparse
from typing import Any

DESCRIPTION = "sleuth render -f FILE|DIR: the children the operator would create, as YAML, offline."


def _run(args: argparse.Namespace) -> int:
    # Deferred on purpose: the body imports the renderers and the Kubernetes client (see above).
    from sleuth.operator.rendercli import run

    return run(args)


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """The chart-level settings, as ``sleuth operator`` takes them."""
    from sleuth.operator.settings import add_image_pull_flags  # the renderers' settings module

    parser.add_argument("--image", help="sleuth image of agent, tool and eval pods")
    parser.add_argument(
        "--model-image", help="vLLM image of model servers whose spec.model.image is empty"
    )
    parser.add_argument(
        "--workload-placement",
        help='JSON {"nodeSelector": {...}, "tolerations": [...]} of the CPU pods',
    )
    parser.add_argument("--tracing-endpoint", default="", help="the operator's tracing default")
    parser.add_argument("--tracing-sampling-ratio", type=float, default=1.0)
    parser.add_argument("--tracing-capture-content", action="store_true")
    parser.add_argument(
        "--network-policy-metrics-from",
        default="",
        help="JSON list of NetworkPolicy peers admitted to the agent, model and tool ports "
        "(Prometheus), e.g. the monitoring namespace (the chart's networkPolicy.metricsFrom)",
    )
    add_image_pull_flags(parser)


def add_autoscaling_flags(parser: argparse.ArgumentParser) -> None:
    """What scales autoscaled Deployments (the chart's ``autoscaling`` values); shared by
    ``sleuth operator`` and ``sleuth render``."""
    parser.add_argument(
        "--autoscaler",
        choices=("keda", "hpa"),
        default="keda",
        help="keda (default): KEDA ScaledObjects scale the model servers (to zero) and agents "
        "with spec.*.autoscaling; hpa: KEDA is absent, agents get a HorizontalPodAutoscaler and "
        "model servers are not autoscaled",
    )
    parser.add_argument(
        "--prometheus-address",
        default="http://prometheus-operated.monitoring.svc:9090",
        help="the Prometheus the ScaledObjects' triggers query (default "
        "http://prometheus-operated.monitoring.svc:9090)",
    )


def add_api_server_flags(parser: argparse.ArgumentParser) -> None:
    """Where the API server's endpoints are (the chart's ``networkPolicy.apiServer``); shared by
    ``sleuth operator`` and ``sleuth render`` (which, offline, renders no route to the API
    server without them)."""
    parser.add_argument(
        "--api-server-cidr",
        action="append",
        metavar="CIDR",
        help="an address range of the Kubernetes API server's endpoints, which agents that admit "
        "ServiceAccount tokens may reach for the cluster's JWKS (repeatable; with "
        "--api-server-port; default: read from EndpointSlice default/kubernetes at start)",
    )
    parser.add_argument(
        "--api-server-port",
        type=int,
        help="the API server's port on those addresses (the endpoints' port, e.g. 6443, not "
        "the kubernetes Service's 443)",
    )


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the children the operator would create for the given resources (no cluster)",
        description=DESCRIPTION,
    )
    parser.add_argument(
        "-f",
        "--filename",
        action="append",
        required=True,
        help="a file, a folder (its *.yaml, *.yml, *.json) or - (standard input); repeatable",
    )
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="namespace of inputs that name none (default: default)",
    )
    add_settings_flags(parser)
    add_autoscaling_flags(parser)
    add_api_server_flags(parser)
    parser.set_defaults(func=_run)


__all__ = ["add_api_server_flags", "add_autoscaling_flags", "add_settings_flags", "register"]
