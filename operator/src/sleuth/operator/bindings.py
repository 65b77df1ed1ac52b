"""The ToolBindings an agent offers: what the agent, tool and eval reconcilers all read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.reconcile_common import parse_spec
from sleuth.operator.render.agent import Binding


@dataclass(frozen=True)
class Bindings:
    """ToolBindings that name an agent: the ones it offers, and the ones refused with why."""

    accepted: list[Binding]
    refused: dict[str, str]


def bindings_for(objs: list[dict[str, Any]], agent: str) -> Bindings:
    """Valid, live ToolBindings of ``agent``; on a tool-name clash the oldest one wins."""
    accepted: list[Binding] = []
    refused: dict[str, str] = {}
    taken: dict[str, str] = {}
    ordered = sorted(
        objs, key=lambda o: (o["metadata"].get("creationTimestamp", ""), o["metadata"]["name"])
    )
    for obj in ordered:
        meta = obj["metadata"]
        if (
            meta.get("deletionTimestamp")
            or (obj.get("spec") or {}).get("agentRef", {}).get("name") != agent
        ):
            continue
        try:
            spec = parse_spec(ToolBindingSpec, obj)
        except InvalidSpec as err:
            refused[meta["name"]] = str(err)
            continue
        if spec.tool_name in taken:
            refused[meta["name"]] = (
                f"spec.name: tool name {spec.tool_name} is already bound to agent {agent} "
                f"by ToolBinding {taken[spec.tool_name]}"
            )
            continue
        taken[spec.tool_name] = meta["name"]
        accepted.append(Binding(meta["name"], spec))
    return Bindings(accepted, refused)


__all__ = ["Bindings", "bindings_for"]
