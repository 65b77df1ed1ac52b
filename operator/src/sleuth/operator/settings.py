"""The chart's render settings from the environment the chart sets and ``--workload-placement``:
shared by ``sleuth operator`` (:mod:`sleuth.operator.main`) and ``sleuth render``
(:mod:`sleuth.operator.rendercli`), so both render with the same settings."""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from sleuth.core.api.v1alpha1.allowlists import Allowlists
from sleuth.core.api.v1alpha1.common import URL_PATTERN
from sleuth.operator.render.meta import PULL_POLICIES, ApiServer, RenderSettings
from sleuth.operator.render.netpol import parse_peers
from sleuth.operator.render.tracing import TracingDefaults


def settings_from_env(
    environ: Mapping[str, str] = os.environ, placement: str = ""
) -> RenderSettings:
    """Images from ``SLEUTH_IMAGE`` (sleuth) and ``SLEUTH_MODEL_IMAGE`` (vLLM), the runbook links
    of the rendered alerts from ``SLEUTH_RUNBOOK_BASE_URL``, when set; ``placement`` as
    :func:`workload_placement` reads it."""
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


def flag_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> RenderSettings:
    """The render settings that ``sleuth operator`` and ``sleuth render`` both take from their
    flags: ``--image`` and ``--model-image`` (over the environment), ``--workload-placement``,
    ``--tracing-*``, ``--network-policy-metrics-from``, the autoscaling and image pull flags,
    ``--api-server-cidr``/``--api-server-port``. ValueError names the flag at fault."""
    env = dict(environ)
    if args.image:
        env["SLEUTH_IMAGE"] = args.image
    if args.model_image:
        env["SLEUTH_MODEL_IMAGE"] = args.model_image
    try:
        settings = settings_from_env(env, args.workload_placement or "")
    except (ValueError, AttributeError, TypeError) as err:
        raise ValueError(f"--workload-placement: not valid JSON: {err}") from None
    try:
        tracing = TracingDefaults(
            args.tracing_endpoint, args.tracing_sampling_ratio, args.tracing_capture_content
        )
    except ValueError as err:
        raise ValueError(f"--tracing-*: {err}") from None
    try:
        peers = parse_peers(args.network_policy_metrics_from or "")
    except ValueError as err:
        raise ValueError(f"--network-policy-metrics-from: {err}") from None
    api_server = api_server_from_flags(
        list(getattr(args, "api_server_cidr", None) or ()), getattr(args, "api_server_port", None)
    )
    return dataclasses.replace(
        settings,
        tracing=tracing,
        metrics_peers=peers,
        api_server=api_server,
        **autoscaling_settings(args),
        **image_pull_settings(args),
    )


def api_server_from_flags(cidrs: list[str], port: int | None) -> ApiServer | None:
    """The API server the flags name, None when they name none; :class:`ValueError` says which
    flag is wrong."""
    if not cidrs and port is None:
        return None
    if not cidrs or port is None:
        raise ValueError("--api-server-cidr and --api-server-port go together: give both")
    if not 1 <= port <= 65535:
        raise ValueError(f"--api-server-port: {port} is not a port (1-65535)")
    networks = []
    for cidr in cidrs:
        try:
            networks.append(str(ipaddress.ip_network(cidr.strip(), strict=False)))
        except ValueError:
            raise ValueError(
                f"--api-server-cidr: {cidr!r} is not an IP address range (e.g. 10.0.0.10/32)"
            ) from None
    return ApiServer(cidrs=tuple(dict.fromkeys(networks)), port=port)


def autoscaling_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``--autoscaler`` and ``--prometheus-address`` as RenderSettings fields; an address that
    is no http(s) URL ends the command with a message naming the flag."""
    address = str(getattr(args, "prometheus_address", "") or "").rstrip("/")
    if not re.fullmatch(URL_PATTERN, address):
        raise ValueError(f"--prometheus-address: not an http(s) URL: {address[:200]!r}")
    return {"autoscaler": getattr(args, "autoscaler", "keda"), "prometheus_address": address}


def _entries(text: str) -> tuple[str, ...]:
    return tuple(e.strip() for e in text.split(",") if e.strip())


def allowlist_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``--allowed-hosts``, ``--allowed-image-repositories`` and ``--cluster-domain`` as
    RenderSettings fields; a malformed entry ends the operator with a message naming it."""
    try:
        allow = Allowlists(
            hosts=_entries(args.allowed_hosts),
            repositories=_entries(args.allowed_image_repositories),
            cluster_domain=args.cluster_domain,
        )
    except ValueError as err:
        raise SystemExit(f"sleuth operator: --allowed-*: {err}") from None
    return {"allowlists": allow, "cluster_domain": args.cluster_domain}


def add_image_pull_flags(parser: argparse.ArgumentParser) -> None:
    """``--image-pull-secret`` and ``--image-pull-policy``, as ``sleuth operator`` and ``sleuth
    render`` take them (the chart's ``imagePullSecrets`` and ``image.pullPolicy``)."""
    parser.add_argument(
        "--image-pull-secret",
        action="append",
        default=[],
        metavar="NAME",
        help="a Secret (type kubernetes.io/dockerconfigjson) every rendered pod pulls its images "
        "with (repeatable): model servers, agents, tool services, eval runs. Each pod looks it "
        "up in its own namespace, so it must exist in every namespace that runs them",
    )
    parser.add_argument(
        "--image-pull-policy",
        choices=PULL_POLICIES,
        help="imagePullPolicy of every rendered container (default: none set, the cluster's "
        "default: IfNotPresent for a tag, Always for :latest)",
    )


def image_pull_settings(args: argparse.Namespace) -> dict[str, Any]:
    """``--image-pull-secret`` and ``--image-pull-policy`` as RenderSettings fields."""
    names = tuple(dict.fromkeys(n.strip() for n in args.image_pull_secret or () if n.strip()))
    return {"image_pull_secrets": names, "image_pull_policy": args.image_pull_policy}
