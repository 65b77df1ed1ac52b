"""``sleuth render -f FILE|DIR``: the children the operator would create, as YAML, offline.

Reads AgentDeployments, ToolBindings and EvalSchedules from files (``-f`` is repeatable; a
folder means its ``*.yaml``, ``*.yml`` and ``*.json`` files in name order; ``-`` is standard
input; other kinds are skipped) and prints, as YAML documents, the objects the operator would
apply for them, in the order it applies them — from the same renderers
(:mod:`sleuth.operator.render.owned`) and with the chart's settings given as the same flags
``sleuth operator`` takes. No cluster is asked anything, so what the operator reads from one is
taken from the files instead:

- a ToolBinding is rendered only when its AgentDeployment is among the inputs (the operator
  renders nothing for a binding without its agent), and two bindings of one agent that offer the
  same tool name: the older one wins (by ``creationTimestamp``, then name), as in the operator;
- an EvalSchedule's PrometheusRule is rendered (as where the prometheus-operator serves the kind),
  and its target (the agent's model endpoint and model) is what the operator writes to
  its AgentDeployment's status, computed from that AgentDeployment's spec;
- ownerReferences carry ``metadata.uid`` when the input has one (objects read back with
  ``kubectl get -o yaml``), else an empty uid.

A resource whose spec the operator would refuse is reported on standard error with the field
that is wrong (``InvalidSpec``), and the exit status is 1; the others are still printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

import yaml

from sleuth.core.api.v1alpha1.agentdeployment import AgentDeploymentSpec
from sleuth.core.api.v1alpha1.evalschedule import EvalScheduleSpec
from sleuth.core.api.v1alpha1.kinds import AGENT_DEPLOYMENT, EVAL_SCHEDULE, TOOL_BINDING
from sleuth.operator.bindings import bindings_for
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.reconcile_common import owner_of, parse_spec
from sleuth.operator.reconcile_eval import check_fires, eval_target
from sleuth.operator.reconcile_tool import agent_tracing
from sleuth.operator.render.meta import Manifest, RenderSettings
from sleuth.operator.render.model import model_endpoint
from sleuth.operator.render.owned import (
    agent_children,
    eval_access_children,
    eval_run_children,
    tool_children,
)
from sleuth.operator.settings import flag_settings

KINDS = (AGENT_DEPLOYMENT.kind, TOOL_BINDING.kind, EVAL_SCHEDULE.kind)
SUFFIXES = (".yaml", ".yml", ".json")


class RenderError(Exception):
    """Input that cannot be read (a file, a document, a flag); the message says which."""


def _documents(text: str, where: str) -> Iterator[dict[str, Any]]:
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as err:
        raise RenderError(f"{where}: not YAML: {err}") from None
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise RenderError(f"{where}: a document is not a mapping")
        if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List"):
            for item in doc.get("items") or []:
                if isinstance(item, dict):
                    yield item
        else:
            yield doc


def read_inputs(paths: list[str], stdin: TextIO) -> list[dict[str, Any]]:
    """Every document of ``paths`` (files, folders, ``-``), in order."""
    out: list[dict[str, Any]] = []
    for raw in paths:
        if raw == "-":
            out += _documents(stdin.read(), "<stdin>")
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in SUFFIXES)
        elif path.is_file():
            files = [path]
        else:
            raise RenderError(f"-f {raw}: no such file or folder")
        for file in files:
            out += _documents(file.read_text(), str(file))
    return out


def _normalized(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """``obj`` with the metadata the operator relies on (namespace, uid) filled in."""
    meta = dict(obj.get("metadata") or {})
    if not meta.get("name"):
        raise RenderError(f"a {obj.get('kind')} has no metadata.name")
    meta.setdefault("namespace", namespace)
    meta.setdefault("uid", "")
    return {**obj, "metadata": meta}


Agents = dict[tuple[str, str], tuple[dict[str, Any], AgentDeploymentSpec | None]]
"""(namespace, name) -> an AgentDeployment and its spec (None when the operator refuses it)."""


def _where(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{obj['kind']} {meta['namespace']}/{meta['name']}"


@dataclasses.dataclass
class Rendered:
    """What ``sleuth render`` produced: the children, and the resources refused (messages)."""

    children: list[Manifest]
    refused: list[str]


def render_objects(
    objs: list[dict[str, Any]], settings: RenderSettings, namespace: str = "default"
) -> Rendered:
    """The children of every sleuth resource in ``objs``, in input order (``namespace``: that
    of the objects that name none). :class:`RenderError` when one has no name."""
    ours = [_normalized(o, namespace) for o in objs if o.get("kind") in KINDS]
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    for obj in ours:
        by_kind[obj["kind"]].append(obj)
    agents: Agents = {}
    refused: list[str] = []
    for obj in by_kind[AGENT_DEPLOYMENT.kind]:
        try:
            spec: AgentDeploymentSpec | None = parse_spec(AgentDeploymentSpec, obj)
        except InvalidSpec as err:
            spec = None
            refused.append(f"{_where(obj)}: InvalidSpec: {err}")
        agents[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = (obj, spec)

    children: list[Manifest] = []
    for obj in ours:
        meta, kind = obj["metadata"], obj["kind"]
        namespace = meta["namespace"]
        if kind == AGENT_DEPLOYMENT.kind:
            spec = agents[(namespace, meta["name"])][1]
            if spec is None:
                continue
            bindings = [
                b for b in by_kind[TOOL_BINDING.kind] if b["metadata"]["namespace"] == namespace
            ]
            bound = bindings_for(bindings, meta["name"])
            schedules = [
                e["metadata"]["name"]
                for e in by_kind[EVAL_SCHEDULE.kind]
                if e["metadata"]["namespace"] == namespace
                and ((e.get("spec") or {}).get("agentRef") or {}).get("name") == meta["name"]
            ]
            children += agent_children(owner_of(obj), spec, bound.accepted, settings, schedules)
        elif kind == TOOL_BINDING.kind:
            agent_ref = ((obj.get("spec") or {}).get("agentRef") or {}).get("name", "")
            agent = agents.get((namespace, agent_ref), (None, None))[0]
            same = [
                b for b in by_kind[TOOL_BINDING.kind] if b["metadata"]["namespace"] == namespace
            ]
            bound = bindings_for(same, agent_ref)
            if meta["name"] in bound.refused:
                refused.append(f"{_where(obj)}: {bound.refused[meta['name']]}")
                continue
            if agent is None:
                refused.append(
                    f"{_where(obj)}: spec.agentRef.name: AgentDeployment {agent_ref} is not "
                    "among the inputs (the operator renders nothing without it)"
                )
                continue
            binding = next(b for b in bound.accepted if b.name == meta["name"])
            children += tool_children(owner_of(obj), binding.spec, settings, agent_tracing(agent))
        else:
            children += _eval_children(obj, agents, by_kind, settings, refused)
    return Rendered(children, refused)


def _eval_children(
    obj: dict[str, Any],
    agents: Agents,
    by_kind: Mapping[str, list[dict[str, Any]]],
    settings: RenderSettings,
    refused: list[str],
) -> list[Manifest]:
    meta = obj["metadata"]
    namespace = meta["namespace"]
    try:
        spec = parse_spec(EvalScheduleSpec, obj)
        check_fires(spec.schedule)
    except InvalidSpec as err:
        refused.append(f"{_where(obj)}: InvalidSpec: {err}")
        return []
    agent_name = spec.agent_ref.name
    agent, agent_spec = agents.get((namespace, agent_name), (None, None))
    if agent is None or agent_spec is None:
        refused.append(
            f"{_where(obj)}: spec.agentRef.name: AgentDeployment {agent_name} is not among the "
            "valid inputs (the operator renders nothing without it)"
        )
        return []
    owner = owner_of(agent)
    status = {
        "modelEndpoint": model_endpoint(owner, agent_spec.model, settings),
        "model": agent_spec.model.effective_served_name,
    }
    bindings = [b for b in by_kind[TOOL_BINDING.kind] if b["metadata"]["namespace"] == namespace]
    target = eval_target({**agent, "status": status}, bindings)
    assert target is not None  # the status above names both
    eval_owner = owner_of(obj)
    # The PrometheusRule is rendered as where the prometheus-operator's CRD is served.
    return eval_access_children(eval_owner, agent_name) + eval_run_children(
        eval_owner, spec, target, settings, rules=True
    )


def render_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> RenderSettings:
    """The chart's settings from the flags (the ones ``sleuth operator`` takes)."""
    try:
        return flag_settings(args, environ)
    except ValueError as err:
        raise RenderError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    """``sleuth render``'s body (its flags: :mod:`sleuth.operator.render_command`)."""
    try:
        settings = render_settings(args, os.environ)
        rendered = render_objects(read_inputs(args.filename, sys.stdin), settings, args.namespace)
    except RenderError as err:
        print(f"sleuth render: {err}", file=sys.stderr)
        return 2
    if rendered.children:
        sys.stdout.write(yaml.safe_dump_all(rendered.children, sort_keys=False))
    for message in rendered.refused:
        print(f"sleuth render: {message}", file=sys.stderr)
    return 1 if rendered.refused else 0


__all__ = ["RenderError", "Rendered", "read_inputs", "render_objects", "run"]
