"""Named query templates: each a function of its own, with a strict parameter schema.

A template (``SqlTemplate`` from the ToolBinding) is a fixed SELECT with ``$1..$n`` placeholders
and typed parameters. It is checked by the guard once, when the tool is built (a template the
guard refuses is a configuration error), and the model only ever supplies parameter values that
match the schema: no free-form SQL surface at all when only templates are configured.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import asyncpg
from opentelemetry import trace

from sleuth.core import spans
from sleuth.core.api.v1alpha1.sqlquery import SqlParameter, SqlTemplate
from sleuth.core.errors import ConfigError
from sleuth.core.sql.guard import CheckedQuery, GuardPolicy, SqlRejected, check_sql
from sleuth.core.tools import ToolSpec
from sleuth.tools.base import ToolArgumentError, ToolOutput
from sleuth.tools.sql.executor import SqlLimits, run_readonly
from sleuth.tools.sql.tool import output_for

_JSON_TYPES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number"},
    "boolean": {"type": "boolean"},
    "date": {"type": "string", "format": "date", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
}


class TemplateConfigError(ConfigError):
    """A template is invalid (the guard refused it, or its parameters do not match)."""


def template_schema(template: SqlTemplate) -> dict[str, Any]:
    """The strict JSON Schema of a template's arguments: all required, nothing else allowed."""
    properties: dict[str, Any] = {}
    for param in template.parameters:
        prop = dict(_JSON_TYPES[param.type])
        if param.allowed_values:
            prop["enum"] = list(param.allowed_values)
        if param.description:
            prop["description"] = param.description
        properties[param.name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in template.parameters],
        "additionalProperties": False,
    }


def _value(param: SqlParameter, value: object, tool: str) -> object:
    if param.type == "date" and isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": is_number,
        "boolean": isinstance(value, bool),
    }.get(param.type, False)
    if not ok:
        shown = {"date": "an ISO date (YYYY-MM-DD)", "integer": "an integer"}.get(
            param.type, f"a {param.type}"
        )
        raise ToolArgumentError(f"{param.name} must be {shown}, got {value!r}", tool=tool)
    if param.allowed_values is not None and value not in param.allowed_values:
        allowed = ", ".join(param.allowed_values)
        raise ToolArgumentError(f"{param.name} must be one of {allowed}, got {value!r}", tool=tool)
    return value


def _check_template(template: SqlTemplate, policy: GuardPolicy) -> CheckedQuery:
    try:
        checked = check_sql(template.sql, policy, [None] * len(template.parameters))
    except SqlRejected as err:
        raise TemplateConfigError(f"template {template.name!r}: {err}") from None
    return checked


class SqlTemplateTool:
    """One named template as a tool."""

    def __init__(
        self, pool: asyncpg.Pool, template: SqlTemplate, policy: GuardPolicy, limits: SqlLimits
    ) -> None:
        self._pool = pool
        self._template = template
        self._checked = _check_template(template, policy)
        self._limits = limits
        self._spec = ToolSpec(
            name=template.name,
            description=template.description,
            parameters=template_schema(template),
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def bind(self, arguments: dict[str, Any]) -> list[object]:
        """The positional params for the template, or an argument error naming the field."""
        name = self._spec.name
        params = {p.name: p for p in self._template.parameters}
        unknown = sorted(set(arguments) - set(params))
        if unknown:
            raise ToolArgumentError(f"unknown argument(s): {', '.join(unknown)}", tool=name)
        missing = [p for p in params if p not in arguments]
        if missing:
            raise ToolArgumentError(f"missing argument(s): {', '.join(missing)}", tool=name)
        return [_value(p, arguments[p.name], name) for p in self._template.parameters]

    async def call(self, arguments: dict[str, Any]) -> ToolOutput:
        values = self.bind(arguments)
        # checked once, when the tool was built
        trace.get_current_span().set_attribute(spans.SQL_GUARD_VERDICT, "template")
        result = await run_readonly(self._pool, self._checked, values, self._limits)
        return output_for(self._checked, result)


def template_tools(
    pool: asyncpg.Pool,
    templates: list[SqlTemplate],
    policy: GuardPolicy,
    limits: SqlLimits,
) -> list[SqlTemplateTool]:
    """One tool per template; raises :class:`TemplateConfigError` on the first invalid one."""
    return [SqlTemplateTool(pool, t, policy, limits) for t in templates]
