"""The ToolBindings an agent offers: what the agent, tool and eval reconcilers all read.

A binding is offered when its spec validates, its SQL templates pass the SQL guard (the same
check the tool service makes at start-up, run here so that a refused template is ``InvalidSpec``
on the ToolBinding instead of a crash-looping pod), and none of the function names it gives the
model (its tool name, and each template's name) is already given to the agent by an older
binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sleuth.core.api.v1alpha1.toolbinding import ToolBindingSpec
from sleuth.core.sql.guard import GuardPolicy, SqlRejected, check_sql
from sleuth.operator.errors import InvalidSpec
from sleuth.operator.reconcile_common import parse_spec
from sleuth.operator.render.agent import Binding


def parse_binding(obj: dict[str, Any]) -> ToolBindingSpec:
    """The ToolBinding's spec, or :class:`InvalidSpec` naming the field (templates included)."""
    spec = parse_spec(ToolBindingSpec, obj)
    check_templates(spec)
    return spec


def check_templates(spec: ToolBindingSpec) -> None:
    """:class:`InvalidSpec` naming the first SQL template the guard refuses."""
    sql = spec.sql_query
    if sql is None or not sql.templates:
        return
    tables = tuple(sorted(sql.allowed_tables))
    for index, template in enumerate(sql.templates):
        reason = _guard(template.sql, tables, len(template.parameters))
        if reason is not None:
            raise InvalidSpec(
                f"spec.sqlQuery.templates[{index}].sql",
                f"template {template.name} is refused by the SQL guard: {reason}",
            )


@lru_cache(maxsize=1024)
def _guard(sql: str, tables: tuple[str, ...], parameters: int) -> str | None:
    """Why the guard refuses a template with ``parameters`` parameters, or None (memoised: the
    resync re-checks the same templates every pass)."""
    try:
        found = check_sql(sql, GuardPolicy.of(tables)).placeholders
    except SqlRejected as err:
        return err.reason
    if found != parameters:  # the guard's count check, in the template's words
        return (
            f"the query has {found} placeholder(s) but the template lists {parameters} parameter(s)"
        )
    return None


def function_names(spec: ToolBindingSpec) -> list[tuple[str, str]]:
    """(field, name) of every function the binding gives the model: its tool name, and with SQL
    templates each template (the tool service then serves only those)."""
    names = [("spec.name", spec.tool_name)]
    templates = spec.sql_query.templates if spec.sql_query else None
    for index, template in enumerate(templates or []):
        names.append((f"spec.sqlQuery.templates[{index}].name", template.name))
    return names


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
    live = [
        o
        for o in objs
        if not o["metadata"].get("deletionTimestamp")
        and ((o.get("spec") or {}).get("agentRef") or {}).get("name") == agent
    ]
    ordered = sorted(
        live, key=lambda o: (o["metadata"].get("creationTimestamp", ""), o["metadata"]["name"])
    )
    for obj in ordered:
        meta = obj["metadata"]
        try:
            spec = parse_binding(obj)
        except InvalidSpec as err:
            refused[meta["name"]] = str(err)
            continue
        names = function_names(spec)
        clash = next(((f, n) for f, n in names if n in taken), None)
        if clash is not None:
            field, name = clash
            refused[meta["name"]] = (
                f"{field}: tool name {name} is already bound to agent {agent} "
                f"by ToolBinding {taken[name]}"
            )
            continue
        taken.update((n, meta["name"]) for _, n in names)
        accepted.append(Binding(meta["name"], spec))
    return Bindings(accepted, refused)


__all__ = ["Bindings", "bindings_for", "check_templates", "function_names", "parse_binding"]
