"""Every name a runbook gives exists: the metric series (against sleuth.core.names and what the
code's registries export), the condition reasons (against :mod:`sleuth.operator.reasons`), the
CRD field paths (against the CRD schemas in crds/), the chart values (against values.yaml) and
the ``sleuth`` command-line flags (against the commands' parsers). A name that does not exist
sends someone at 3 a.m. after a field, series or reason that is not there."""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from sleuth.core.cli import build_parser
from sleuth.core.names import SERIES
from sleuth.operator.reasons import REASONS
from sleuth.operator.render.evalrules import ALERT_NAMES
from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

RUNBOOKS = ROOT / "docs" / "runbooks"
PAGES = sorted(RUNBOOKS.glob("*.md"))
OPERATOR_ALERTS = {p.stem for p in PAGES if p.stem.startswith("Sleuth")}
# Series of other programs a runbook may name (kube-state-metrics, Prometheus' own).
FOREIGN_SERIES = {
    "kube_deployment_status_replicas_available",
    "kube_pod_container_status_restarts_total",
    "up",
}
# CamelCase words in backticks that are Kubernetes' (kinds, pod and Job reasons), not sleuth's.
KUBERNETES_WORDS = {
    "AgentDeployment", "ToolBinding", "EvalSchedule", "PrometheusRule", "ServiceMonitor",
    "ServiceAccount", "RoleBinding", "ClusterRole", "ConfigMap", "CronJob", "NetworkPolicy",
    "PodDisruptionBudget", "OOMKilled", "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull",
    "DeadlineExceeded", "BackoffLimitExceeded", "FailedCreate", "FailedScheduling",
}  # fmt: skip
_SERIES = re.compile(r"\b(?:sleuth|rag|agent|kube)_[a-z0-9_]*[a-z0-9]\b")
_CODE = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"```[a-z]*\n(.*?)```", re.S)
_CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
_FIELD = re.compile(r"\b(?:spec|status)(?:\.[A-Za-z][A-Za-z0-9]*|\[[^\]]*\])+")
SLEUTH_KINDS = ("agentdeployment", "toolbinding", "evalschedule", "<kind>")
_SUFFIXES = ("_bucket", "_sum", "_count", "_created")


# -- What exists ----------------------------------------------------------------------------------


@functools.cache
def exported_series() -> set[str]:
    """The series a Prometheus scraping sleuth's processes sees: sleuth.core.names (the
    operator's EvalSchedule series among them) and the operator's, agent's and tool service's
    registries, built here as the processes build them. Not the gauges ``sleuth eval
    --pushgateway`` pushes from a run by hand (``sleuth_eval_failed_rows``,
    ``agent_tool_selection_accuracy_by_tool``): the scheduled runs push nothing."""
    from sleuth.agent.metrics import AgentMetrics, OnlineEvalMetrics
    from sleuth.operator.loop.metrics import OperatorMetrics
    from sleuth.tools.service.app import Metrics as ToolServiceMetrics

    online = CollectorRegistry()
    OnlineEvalMetrics("a", online)
    registries: list[CollectorRegistry] = [
        OperatorMetrics().registry,
        AgentMetrics("a").registry,
        online,
        ToolServiceMetrics().registry,
    ]
    names = set(SERIES) | {"sleuth_operator_info"}  # the info gauge is made when /metrics serves
    for registry in registries:
        for family in registry.collect():
            names.add(family.name)
            if family.type == "counter":
                names.add(f"{family.name}_total")
    return names


@functools.cache
def crd_fields() -> set[str]:
    """Every field path of the three CRDs' spec and status (``spec.model.gpu.count``)."""
    paths: set[str] = set()

    def walk(schema: dict[str, Any], path: str) -> None:
        paths.add(path)
        for name, sub in (schema.get("properties") or {}).items():
            walk(sub, f"{path}.{name}")
        if "items" in schema:
            walk(schema["items"], path)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            walk(extra, f"{path}.*")

    for crd in sorted((ROOT / "crds").glob("*.yaml")):
        doc = yaml.safe_load(crd.read_text(encoding="utf-8"))
        for version in doc["spec"]["versions"]:
            root = version["schema"]["openAPIV3Schema"]["properties"]
            for top in ("spec", "status"):
                if top in root:
                    walk(root[top], top)
    return paths


@functools.cache
def chart_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(
        (ROOT / "charts" / "sleuth" / "values.yaml").read_text(encoding="utf-8")
    )
    return values


def value_exists(values: dict[str, Any], dotted: str) -> bool:
    node: Any = values
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return isinstance(node, dict) and not node  # a free-form map (labels): any key
    return True


@functools.cache
def sleuth_commands() -> dict[tuple[str, ...], set[str]]:
    """Every ``sleuth`` (sub)command path and its option strings."""
    out: dict[tuple[str, ...], set[str]] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        out[path] = set(parser._option_string_actions)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return out


# -- What the runbooks say ------------------------------------------------------------------------


def code_spans(text: str) -> Iterator[str]:
    """Inline code and the lines of fenced code blocks."""
    for block in _FENCE.findall(text):
        yield from block.splitlines()
    yield from _CODE.findall(_FENCE.sub("", text))


def series_named(text: str) -> set[str]:
    names = set()
    for span in code_spans(text):
        for name in _SERIES.findall(span.split("#")[0] if span.startswith("kubectl") else span):
            names.add(name)
    return names


def reasons_named(text: str) -> set[str]:
    return {s for s in _CODE.findall(text) if _CAMEL.match(s)}


def fields_named(text: str) -> set[str]:
    found = set()
    for span in code_spans(text):
        if span.lstrip().startswith("kubectl") and not any(k in span for k in SLEUTH_KINDS):
            continue  # a field of a pod, a Job, ...: Kubernetes', not ours
        for match in _FIELD.findall(span):
            found.add(re.sub(r"\[[^\]]*\]", "", match))
    return found | _table_fields(text)


def _table_fields(text: str) -> set[str]:
    """Fields of a knob table whose header names their common prefix
    (``knob (`spec.vectorSearch.…`)``: each cell's backticked names are below it)."""
    found: set[str] = set()
    prefix, column = None, -1
    for line in text.splitlines():
        if not line.startswith("|"):
            prefix = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        header = next(
            ((i, m) for i, c in enumerate(cells) if (m := re.search(r"`(spec\.[\w.]+)\.…`", c))),
            None,
        )
        if header is not None:
            column, prefix = header[0], header[1].group(1)
            continue
        if prefix is None or set(line) <= set("|-: ") or column >= len(cells):
            continue
        for name in _CODE.findall(re.sub(r"\([^)]*\)", "", cells[column])):
            word = name.split()[0]
            if re.match(r"^[a-z][A-Za-z0-9.]*$", word) and "." not in word[:1]:
                found.add(f"{prefix}.{word}")
    return found


def values_named(text: str, values: dict[str, Any]) -> set[str]:
    found = set()
    for span in _CODE.findall(text):
        word = re.split(r"[\s=/,]", span)[0]
        head = word.split(".")[0]
        if head in values and ("." in word or (head[0].islower() and head != head.lower())):
            found.add(word.rstrip("."))
    return found


def commands_named(text: str) -> list[tuple[str, list[str]]]:
    """Each ``sleuth ...`` command line: (its words, the flags it passes)."""
    out = []
    for span in code_spans(text):
        for part in re.split(r"[;|&(]", span):
            words = part.strip().split()
            if words[:1] == ["sleuth"]:
                flags = [w.split("=")[0] for w in words if w.startswith("--")]
                out.append((" ".join(words), flags))
    return out


def lone_flags(text: str) -> set[str]:
    """Flags named on their own (`` `--agent-url` ``), outside a command."""
    return {s for s in _CODE.findall(text) if re.match(r"^--[a-z][a-z0-9-]*$", s)}


# -- The checks ----------------------------------------------------------------------------------


def problems(text: str) -> list[str]:
    """What a runbook names that does not exist."""
    series, fields, values = exported_series(), crd_fields(), chart_values()
    commands = sleuth_commands()
    every_flag = set().union(*commands.values())
    out = []
    for name in sorted(series_named(text)):
        base = next((name.removesuffix(s) for s in _SUFFIXES if name.endswith(s)), name)
        if name not in series and base not in series and name not in FOREIGN_SERIES:
            out.append(f"series {name}")
    known_words = set(REASONS) | set(ALERT_NAMES) | OPERATOR_ALERTS | KUBERNETES_WORDS
    out += [f"reason {r}" for r in sorted(reasons_named(text) - known_words)]
    out += [f"field {f}" for f in sorted(fields_named(text) - fields)]
    out += [f"value {v}" for v in sorted(values_named(text, values)) if not value_exists(values, v)]
    for line, flags in commands_named(text):
        words = line.split()[1:]
        path: tuple[str, ...] = ()
        while words and (*path, words[0]) in commands:
            path = (*path, words.pop(0))
        out += [f"flag {f} of `sleuth {' '.join(path)}`" for f in flags if f not in commands[path]]
    out += [f"flag {f}" for f in sorted(lone_flags(text) - every_flag)]
    return out


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_name_a_runbook_gives_exists(page: Path) -> None:
    assert problems(page.read_text(encoding="utf-8")) == []


def test_the_runbooks_name_things_at_all() -> None:
    """The parsers find names of each sort in the runbooks (a parser that finds nothing passes
    every page)."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    assert {"rag_faithfulness_score", "sleuth_eval_last_run_failed"} <= series_named(text)
    assert {"SecretNotFound", "AgentNotFound"} <= reasons_named(text)
    assert {"spec.alerts.staleAfter", "spec.vectorSearch.reranker.endpoint"} <= fields_named(text)
    assert "metrics.prometheusRule.notReadyForMinutes" in values_named(text, chart_values())
    assert any(line.startswith("sleuth eval retrieval") for line, _ in commands_named(text))
    assert "--agent-url" in lone_flags(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("check `sleuth_eval_failed_rows`", "series sleuth_eval_failed_rows"),
        ("reason `SecretKeyNotFound`", "reason SecretKeyNotFound"),
        ("set `spec.alerts.staleAfterSeconds`", "field spec.alerts.staleAfterSeconds"),
        ("`kubectl get evalschedule x -o jsonpath='{.status.lastRunMesage}'`",
         "field status.lastRunMesage"),
        ("| knob (`spec.vectorSearch.…`) |\n|---|\n| `rerankerModel` |",
         "field spec.vectorSearch.rerankerModel"),
        ("raise `operator.resyncSecond`", "value operator.resyncSecond"),
        ("```\nsleuth eval ragas --golden g --judge-modle x\n```",
         "flag --judge-modle of `sleuth eval ragas`"),
        ("the `--agent-uri` flag", "flag --agent-uri"),
    ],
)  # fmt: skip
def test_a_made_up_name_is_caught(text: str, problem: str) -> None:
    assert problem in problems(text)
