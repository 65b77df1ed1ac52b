"""Namespace-scoped mode: keep kopf away from the cluster-scoped reads it is not granted.

With ``--namespace``, the chart grants Roles in those namespaces only. kopf would still list and
watch Namespaces and CustomResourceDefinitions cluster-wide (to notice new ones), be refused,
retry with back-off and log errors before falling back. kopf's documented restricted mode,
``settings.scanning.disabled``, skips those scans: the named namespaces and the CRDs present at
start-up are used as they are.
"""

from __future__ import annotations

from typing import Any

import kopf


def restrict_to_namespaces() -> None:
    """Register a start-up handler that turns kopf's cluster scanning off."""

    @kopf.on.startup(id="restricted-scanning")
    def _no_cluster_scanning(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.scanning.disabled = True


__all__ = ["restrict_to_namespaces"]
