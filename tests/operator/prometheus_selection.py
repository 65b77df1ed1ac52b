"""How prometheus-operator picks what a Prometheus loads, done here without prometheus-operator.

prometheus-operator is not run by the suite (it would need its Go build and, to load anything,
its StatefulSet's pods). What it does with a ``Prometheus`` object's selectors is small and
documented, and is done here the same way against the real apiserver:

- **Rules** (``ruleSelector``, ``ruleNamespaceSelector``, both ``metav1.LabelSelector``): the
  namespaces whose labels match ``ruleNamespaceSelector`` (``{}``: every namespace; absent: only
  the Prometheus' own), and in them the PrometheusRules whose labels match ``ruleSelector``
  (absent: none). Each selected rule's ``spec`` becomes a rule file
  ``<namespace>-<name>-<uid>.yaml``. The label selectors are turned into the string form and
  evaluated by the apiserver (``kubectl get -l``), as prometheus-operator's informers pass them.
- **ServiceMonitors** (``serviceMonitorSelector``): a selected ServiceMonitor's endpoint becomes a
  scrape job ``serviceMonitor/<namespace>/<name>/<i>`` with its ``path``, its ``honorLabels``
  (``honor_labels``) and the target labels prometheus-operator's relabelling gives a target
  (``namespace``, ``service``, ``endpoint``, ``job``). What is not done here: discovering the
  targets from Endpoints — the target is the address of the operator's process on the host.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def selector_string(selector: dict[str, Any]) -> str:
    """A ``metav1.LabelSelector`` as the apiserver's string form (``{}`` is ``""``: all)."""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
        else:
            raise ValueError(f"unknown selector operator {op}")
    return ",".join(terms)


def _names(kube: Any, *args: str) -> list[dict[str, Any]]:
    out = kube.kubectl("get", *args, "-o", "json")
    items: list[dict[str, Any]] = json.loads(out.stdout)["items"]
    return items


def selected_rules(
    kube: Any, prometheus: dict[str, Any], namespaces: list[str]
) -> list[dict[str, Any]]:
    """The PrometheusRules a ``Prometheus`` object (``prometheus``: its metadata and spec) loads,
    among the rules of ``namespaces`` (the test's namespaces: the cluster holds other tests')."""
    spec = prometheus["spec"]
    if spec.get("ruleSelector") is None:
        return []
    ns_selector = spec.get("ruleNamespaceSelector")
    if ns_selector is None:
        allowed = {prometheus["metadata"]["namespace"]}
    else:
        allowed = {
            n["metadata"]["name"]
            for n in _names(kube, "namespaces", "-l", selector_string(ns_selector))
        }
    rule_selector = selector_string(spec["ruleSelector"])
    return [
        rule
        for ns in namespaces
        if ns in allowed
        for rule in _names(kube, "prometheusrules", "-n", ns, "-l", rule_selector)
    ]


def rule_files(rules: list[dict[str, Any]], folder: Path) -> list[str]:
    """Each rule's spec as ``<namespace>-<name>-<uid>.yaml`` in ``folder``; the glob to load."""
    folder.mkdir(parents=True, exist_ok=True)
    for rule in rules:
        meta = rule["metadata"]
        name = f"{meta['namespace']}-{meta['name']}-{meta['uid']}.yaml"
        (folder / name).write_text(yaml.safe_dump(rule["spec"]), encoding="utf-8")
    return [str(folder / "*.yaml")]


def selected_monitors(
    prometheus: dict[str, Any], monitors: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The ServiceMonitors (as rendered by the chart) the ``serviceMonitorSelector`` matches
    (``matchLabels`` only: what kube-prometheus-stack sets)."""
    want = (prometheus["spec"].get("serviceMonitorSelector") or {}).get("matchLabels") or {}
    return [
        m
        for m in monitors
        if all(m["metadata"].get("labels", {}).get(k) == v for k, v in want.items())
    ]


def scrape_job(monitor: dict[str, Any], service: str, target: str) -> dict[str, Any]:
    """The scrape job of a ServiceMonitor's first endpoint, its target ``target`` (host:port)
    standing for the Service ``service`` in the monitor's namespace."""
    meta, endpoint = monitor["metadata"], monitor["spec"]["endpoints"][0]
    return {
        "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/0",
        "honor_labels": bool(endpoint.get("honorLabels", False)),
        "metrics_path": endpoint.get("path", "/metrics"),
        "scrape_interval": "1s",
        "scrape_timeout": "1s",
        "static_configs": [
            {
                "targets": [target],
                "labels": {
                    "namespace": meta["namespace"],
                    "service": service,
                    "endpoint": endpoint["port"],
                    "job": service,
                },
            }
        ],
    }


__all__ = [
    "rule_files",
    "scrape_job",
    "selected_monitors",
    "selected_rules",
    "selector_string",
]
