"""``spec.approval`` of a ToolBinding: a person approves a call before the tool acts.

``required: always`` pauses every call of the tool; ``required: onMatch`` pauses a call only
when one of the ``match`` rules holds:

- ``toolOutput``: the call's arguments carry text that another tool returned earlier in the
  same run (a ``web_search`` query quoting a figure a ``sql_query`` read: data leaving through
  the query). Text the question itself holds does not count.
- ``tables`` (``sql_query`` only): the SQL of the call reads one of these tables (each must be
  one of ``spec.sqlQuery.allowedTables``). A call whose SQL cannot be read (a named template's)
  is paused too: the rule fails closed.

The agent's configuration file carries the same model (``tools[].approval``); the agent keeps a
paused run for ``timeoutSeconds``, then tells the model the call was refused. Who may decide:
the caller who started the run, when its ``spec.agent.access`` entry grants ``approve``
(docs/agent.md, "Approval").
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, model_validator

from sleuth.core.api.fields import ApprovalTimeoutSeconds
from sleuth.core.api.v1alpha1.common import SpecModel

SQL_TABLE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"
MAX_APPROVAL_TABLES = 32

_MATCH_NEEDS_A_RULE = "spec.approval.match: set toolOutput: true or tables (a rule that can match)"
_MATCH_IFF_ON_MATCH = (
    "spec.approval.match is required when required is onMatch, and forbidden when it is always"
)


class ApprovalMatch(SpecModel):
    """When a call needs approval (required: onMatch): any one rule that holds."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.toolOutput) && self.toolOutput) || has(self.tables)",
                    "message": _MATCH_NEEDS_A_RULE,
                }
            ]
        }
    )

    tool_output: bool = Field(
        default=False,
        description="Pause a call whose arguments carry text another tool returned earlier in "
        "the same run (a number of two digits or more, or three words in a row, that the "
        "question does not hold): for web_search, data leaving the cluster through the query.",
    )
    tables: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_APPROVAL_TABLES,
        description="sql_query only: pause a call whose SQL reads one of these tables (each one "
        "of spec.sqlQuery.allowedTables). A call whose SQL cannot be read, such as a named "
        "template's, is paused too.",
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            "items": {"type": "string", "pattern": SQL_TABLE, "maxLength": 127},
        },
    )

    @model_validator(mode="after")
    def _a_rule(self) -> ApprovalMatch:
        if not self.tool_output and not self.tables:
            raise ValueError(_MATCH_NEEDS_A_RULE)
        return self


class ApprovalSpec(SpecModel):
    """A person approves a call of this tool before it runs (always, or when a rule matches)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "(self.required == 'onMatch') == has(self.match)",
                    "message": _MATCH_IFF_ON_MATCH,
                }
            ]
        }
    )

    required: Literal["always", "onMatch"] = Field(
        description="always: every call waits for a person's decision; onMatch: only calls "
        "that one of the match rules catches."
    )
    match: ApprovalMatch | None = Field(
        default=None, description="The rules of required: onMatch (forbidden with always)."
    )
    timeout_seconds: ApprovalTimeoutSeconds = Field(
        default=300,
        description="How long a paused call waits for the decision; then it counts as refused, "
        "the model is told so and answers with what it has.",
    )

    @model_validator(mode="after")
    def _match_iff_on_match(self) -> ApprovalSpec:
        if (self.required == "onMatch") != (self.match is not None):
            raise ValueError(_MATCH_IFF_ON_MATCH)
        return self


def tables_rule_message(tool_type: str) -> str | None:
    """Why ``approval.match.tables`` cannot go with ``tool_type`` (None: it can)."""
    if tool_type == "sql_query":
        return None
    return f"spec.approval.match.tables is only for type sql_query (this tool is {tool_type})"


def approval_rules() -> list[JsonValue]:
    """The ToolBinding-level CEL rules: tables only for sql_query, and only allowlisted ones."""
    tables = "has(self.approval) && has(self.approval.match) && has(self.approval.match.tables)"
    return [
        {
            "rule": f"!({tables}) || self.type == 'sql_query'",
            "message": "spec.approval.match.tables is only for type sql_query",
        },
        {
            "rule": f"!({tables}) || !has(self.sqlQuery) || self.approval.match.tables.all(t, "
            "t in self.sqlQuery.allowedTables)",
            "message": "spec.approval.match.tables: every table must be one of "
            "spec.sqlQuery.allowedTables",
        },
    ]


__all__ = [
    "MAX_APPROVAL_TABLES",
    "ApprovalMatch",
    "ApprovalSpec",
    "approval_rules",
    "tables_rule_message",
]
