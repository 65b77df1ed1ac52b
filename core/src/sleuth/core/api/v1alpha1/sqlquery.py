"""``spec.sqlQuery`` of a ToolBinding: read-only SQL over allowlisted tables, and named
query templates."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from sleuth.core.api.v1alpha1.common import SecretKeyRef, SpecModel

SQL_IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$"


class SqlParameter(SpecModel):
    """One typed parameter of a named query template ($1 is the first)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.allowedValues) || self.type == 'string'",
                    "message": "allowedValues is only for parameters of type string",
                    "fieldPath": ".allowedValues",
                }
            ]
        }
    )

    name: str = Field(
        min_length=1, max_length=64, pattern=r"^[a-z_][a-z0-9_]*$", description="Parameter name."
    )
    type: Literal["string", "integer", "number", "boolean", "date"] = Field(
        description="JSON type the model must supply."
    )
    description: str = Field(
        default="", max_length=1024, description="What the model should put here."
    )
    allowed_values: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description=(
            "For a string parameter, the only values accepted (a JSON Schema enum the model "
            "sees). The deterministic router fills such a parameter from the question."
        ),
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )

    @model_validator(mode="after")
    def _enum_only_for_strings(self) -> SqlParameter:
        if self.allowed_values is not None and self.type != "string":
            raise ValueError("allowedValues is only for parameters of type string")
        return self


class SqlTemplate(SpecModel):
    """A named, fixed SELECT offered to the model as its own function."""

    name: str = Field(
        min_length=1,
        max_length=64,
        pattern=r"^[a-zA-Z_][a-zA-Z0-9_-]*$",
        description="Function name the model sees.",
    )
    description: str = Field(
        min_length=1, max_length=4096, description="When to use this query (and when not)."
    )
    sql: str = Field(
        min_length=1,
        max_length=16384,
        description="One SELECT with $1..$n placeholders; checked by the SQL guard.",
    )
    parameters: list[SqlParameter] = Field(
        default_factory=list,
        max_length=32,
        description="Parameters in placeholder order.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


class SqlQuerySpec(SpecModel):
    """Read-only SQL over an allowlist of PostgreSQL tables."""

    connection_secret_ref: SecretKeyRef = Field(
        description="Secret key holding the PostgreSQL connection URI of a SELECT-only role."
    )
    allowed_tables: list[str] = Field(
        min_length=1,
        max_length=256,
        description="Tables (optionally schema-qualified) the model may read; all others are "
        "refused.",
        json_schema_extra={
            "x-kubernetes-list-type": "set",
            "items": {"type": "string", "pattern": SQL_IDENTIFIER, "maxLength": 127},
        },
    )
    max_rows: int = Field(
        default=100, ge=1, le=10000, description="Rows returned at most; the result says when cut."
    )
    statement_timeout_seconds: int = Field(
        default=5, ge=1, le=300, description="PostgreSQL statement_timeout of each query."
    )
    pool_size: int = Field(
        default=4,
        ge=1,
        le=100,
        description="Database connections each tool service replica keeps at most. Size it to the "
        "SQL calls in flight at the agent's peak (see docs/tools.md); the database role must "
        "allow replicas x poolSize connections.",
    )
    acquire_timeout_seconds: int = Field(
        default=2,
        ge=1,
        le=60,
        description="How long a call waits for a free connection; then it fails at once with a "
        "busy error (the agent may retry) instead of queueing until the tool times out.",
    )
    templates: list[SqlTemplate] | None = Field(
        default=None,
        max_length=64,
        description="Named query templates, each its own function for the model.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )


__all__ = ["SQL_IDENTIFIER", "SqlParameter", "SqlQuerySpec", "SqlTemplate"]
