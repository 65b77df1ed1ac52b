"""``sleuth operator``'s body: the settings from its arguments, then one controller run by kopf.

This is the operator's one edge: the arguments (and, for the images and the runbook links, the
environment variables the chart sets) become one
:class:`~sleuth.operator.controller.OperatorSettings`, from which one
:class:`~sleuth.operator.controller.Controller` is built and handed to kopf as ``memo``. Nothing
below reads ``os.environ`` for configuration. (:mod:`sleuth.operator.cli` holds the flags and
imports this module only when the command runs.)
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
from collections.abc import Mapping

import kopf
from kopf._core.engines.peering import Identity  # a NewType of str, not re-exported

import sleuth.operator.handlers  # noqa: F401  (registers the handlers)
from sleuth.operator.apiserver import discover_api_server
from sleuth.operator.controller import Controller, OperatorSettings
from sleuth.operator.issuer import discover_issuer
from sleuth.operator.loop.leader import default_identity, lead
from sleuth.operator.loop.metrics import serve
from sleuth.operator.loop.runtime import LoopSettings
from sleuth.operator.loop.scope import restrict_to_namespaces
from sleuth.operator.loop.workqueue import Backoff
from sleuth.operator.monitoring import MonitoringSettingsError, rule_labels, series_namespace_label
from sleuth.operator.settings import allowlist_settings, flag_settings


def operator_settings(
    args: argparse.Namespace, environ: Mapping[str, str] = os.environ
) -> OperatorSettings:
    """The controller's settings from the parsed arguments (flags win over the environment)."""
    try:
        render = flag_settings(args, environ)
    except ValueError as err:
        raise SystemExit(f"sleuth operator: {err}") from None
    if args.workers < 1:
        raise SystemExit("sleuth operator: --workers: must be at least 1")
    try:
        labels = rule_labels(args.prometheus_rule_label or ())
    except MonitoringSettingsError as err:
        raise SystemExit(f"sleuth operator: --prometheus-rule-label: {err}") from None
    try:
        namespace_label = series_namespace_label(args.series_namespace_label or "namespace")
    except MonitoringSettingsError as err:
        raise SystemExit(f"sleuth operator: --series-namespace-label: {err}") from None
    loop = LoopSettings(
        kubeconfig=args.kubeconfig or None,
        namespaces=tuple(args.namespace or ()),
        resync_seconds=args.resync_seconds,
        workers=args.workers,
        shutdown_seconds=args.shutdown_seconds,
        backoff=Backoff(base=args.backoff_base_seconds, cap=args.backoff_max_seconds),
    )
    render = dataclasses.replace(
        render,
        rule_labels=labels,
        series_namespace_label=namespace_label,
        **allowlist_settings(args),
    )
    return OperatorSettings(loop=loop, render=render)


def run(args: argparse.Namespace) -> int:
    controller = Controller.build(operator_settings(args))
    kopf.configure(verbose=args.verbose)  # first: what the discoveries below log is shown
    if not args.verbose:  # kopf logs a line per watch event (17,000 children at 1,000 agents)
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    # The cluster's ServiceAccount issuer, which every agent accepts (render/access.py).
    render = controller.ctx.settings
    issuer = args.service_account_issuer or discover_issuer(
        controller.ctx.kube, render.service_account_issuer
    )
    # The API server's endpoints, which those agents' NetworkPolicies admit (apiserver.py).
    api_server = render.api_server or discover_api_server(controller.ctx.kube)
    controller.ctx.settings = dataclasses.replace(
        render, service_account_issuer=issuer, api_server=api_server
    )
    log = logging.getLogger("sleuth.operator")
    log.info("agents accept ServiceAccount tokens of %s", issuer)
    if api_server is not None:
        log.info(
            "agents that admit ServiceAccount tokens may reach the API server at %s, port %d",
            ", ".join(api_server.cidrs),
            api_server.port,
        )
    if args.metrics_port:
        serve(args.metrics_port)
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
    namespaces = list(controller.loop.settings.namespaces)
    if namespaces:
        restrict_to_namespaces()
    kopf.run(
        identity=Identity(identity),
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=args.liveness or None,
        memo=kopf.Memo(controller=controller),
    )
    return 0


__all__ = ["operator_settings", "run"]
