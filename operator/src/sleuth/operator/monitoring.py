"""What ``sleuth operator`` is told about the platform's Prometheus, checked at start.

``--prometheus-rule-label KEY=VALUE`` (repeatable; the chart passes
``metrics.prometheusRule.labels``) adds labels to every EvalSchedule's PrometheusRule, so that a
``ruleSelector`` such as kube-prometheus-stack's ``release: <release>`` selects it.
``--series-namespace-label`` names the label under which that Prometheus keeps the
EvalSchedule's namespace of the operator's own series: ``namespace`` when it scrapes the
operator with ``honorLabels`` (the chart's default), ``exported_namespace`` when it does not
(``metrics.serviceMonitor.honorLabels=false``, or a Prometheus that overrides honorLabels). A bad
value is refused with the flag named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Kubernetes label syntax (apimachinery's validation): an optional DNS-subdomain prefix and a name.
_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Labels the operator sets itself and selects its children by: never replaced from outside.
_OWN_PREFIXES = ("app.kubernetes.io/", "sleuth.dev/")
SERIES_NAMESPACE_LABELS = ("namespace", "exported_namespace")


class MonitoringSettingsError(ValueError):
    """A ``--prometheus-rule-label`` or ``--series-namespace-label`` the operator cannot use."""


def rule_labels(given: Iterable[str]) -> dict[str, str]:
    """``KEY=VALUE`` arguments as labels; :class:`MonitoringSettingsError` names the bad one."""
    labels: dict[str, str] = {}
    for item in given:
        key, sep, value = item.partition("=")
        if not sep:
            raise MonitoringSettingsError(f"{item!r}: expected KEY=VALUE")
        _check_key(item, key)
        if len(value) > 63 or not _NAME.match(value):
            raise MonitoringSettingsError(
                f"{item!r}: the value must be at most 63 characters of letters, digits, '-', "
                "'_' and '.', beginning and ending with a letter or digit"
            )
        if key in labels and labels[key] != value:
            raise MonitoringSettingsError(f"{item!r}: label {key} given twice")
        labels[key] = value
    return labels


def _check_key(item: str, key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    if not name or len(name) > 63 or not _NAME.match(name):
        raise MonitoringSettingsError(
            f"{item!r}: the label name must be 1-63 characters of letters, digits, '-', '_' and "
            "'.', beginning and ending with a letter or digit, after an optional DNS prefix and '/'"
        )
    if slash and (len(prefix) > 253 or not _PREFIX.match(prefix)):
        raise MonitoringSettingsError(f"{item!r}: {prefix!r} is not a DNS subdomain prefix")
    if key.startswith(_OWN_PREFIXES):
        raise MonitoringSettingsError(
            f"{item!r}: the operator sets the app.kubernetes.io/* and sleuth.dev/* labels itself "
            "(it finds its children by them)"
        )


def series_namespace_label(label: str) -> str:
    """The label Prometheus keeps the EvalSchedule's namespace of the operator's series in."""
    if label not in SERIES_NAMESPACE_LABELS:
        raise MonitoringSettingsError(
            f"{label!r}: must be one of {', '.join(SERIES_NAMESPACE_LABELS)} (namespace when the "
            "operator is scraped with honorLabels, exported_namespace when not)"
        )
    return label


__all__ = [
    "SERIES_NAMESPACE_LABELS",
    "MonitoringSettingsError",
    "rule_labels",
    "series_namespace_label",
]
