"""Types shared by every sleuth kind: references, resources, conditions, the base model.

Field names are camelCase on the wire (``alias_generator``) and snake_case in Python. Every field
carries a description: it is what ``kubectl explain`` prints, through the generated CRD schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic.alias_generators import to_camel

from sleuth.core.api.quantity import RESOURCE_NAME, parse_quantity, valid_resource_name

GROUP = "sleuth.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

# Kubernetes object names used as references (RFC 1123 subdomain, the common case).
DNS_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
# A relative path inside a volume, without '..'.
RELATIVE_PATH = r"^[^/.]([^.]|\.[^.]|\.$)*$"

ObjectName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_NAME)]
"""The name of an object in the same namespace."""
DataKey = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
"""A key of a ConfigMap's or a Secret's data."""
VolumePath = Annotated[str, Field(min_length=1, max_length=1024, pattern=RELATIVE_PATH)]
"""A file inside a mounted PersistentVolumeClaim (relative, no '..')."""

# An http or https URL: every endpoint field (:mod:`.specpaths` finds them by this pattern).
URL_PATTERN = r"^https?://[^\s/]+(/\S*)?$"
# A URL that must use TLS (a JWKS: the keys that decide who gets in). Like every URL field it is
# an endpoint the allowlists check (:mod:`.specpaths` finds it by this pattern).
HTTPS_URL_PATTERN = r"^https://[^\s/]+(/\S*)?$"


def exactly_one_message(path: str, first: str, second: str) -> str:
    """The refusal of an object at ``path`` that sets both of two fields, or neither."""
    return f"{path}: set exactly one of {first} and {second}"


def exactly_one_rule(path: str, first: str, second: str) -> dict[str, JsonValue]:
    """CEL: exactly one of the two (camelCase) fields is set."""
    return {
        "rule": f"has(self.{first}) != has(self.{second})",
        "message": exactly_one_message(path, first, second),
    }


class SpecModel(BaseModel):
    """Base of every spec model: camelCase aliases, unknown fields refused, immutable."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The camelCase, JSON-compatible form (what a manifest holds), without unset optionals."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class LocalObjectRef(SpecModel):
    """A reference to an object of a known kind in the same namespace."""

    name: str = Field(
        min_length=1, max_length=253, pattern=DNS_NAME, description="Name of the object."
    )


class SecretKeyRef(SpecModel):
    """A key of a Secret in the same namespace. Credentials are only ever given this way."""

    name: str = Field(
        min_length=1, max_length=253, pattern=DNS_NAME, description="Name of the Secret."
    )
    key: str = Field(
        min_length=1,
        max_length=253,
        pattern=r"^[-._a-zA-Z0-9]+$",
        description="Key within the Secret whose value is used.",
    )


Quantity = str | int
"""A Kubernetes resource quantity: ``500m``, ``2Gi`` or a plain integer."""


MAX_RESOURCE_NAMES = 16
MAX_QUANTITY_CHARS = 64


def _quantity_map(schema: dict[str, Any]) -> None:
    """Bounds the CEL cost estimator needs: names and values of a bounded size."""
    schema["maxProperties"] = MAX_RESOURCE_NAMES
    for option in [schema, *schema.get("anyOf", [])]:  # the map, or inside Optional's anyOf
        values = option.get("additionalProperties")
        if isinstance(values, dict):
            values["maxLength"] = MAX_QUANTITY_CHARS


_RESOURCE_NAME_RE2 = RESOURCE_NAME.replace("\\", "\\\\")


def _map_rules(field: str) -> list[JsonValue]:
    return [
        {
            "rule": f"!has(self.{field}) || self.{field}.all(k, k.matches('{_RESOURCE_NAME_RE2}'))",
            "message": f"{field}: a resource name is cpu, memory, ephemeral-storage, "
            "hugepages-<size> or domain-qualified (e.g. nvidia.com/gpu)",
            "fieldPath": f".{field}",
        },
        {
            "rule": f"!has(self.{field}) || "
            f"self.{field}.all(k, isQuantity(string(self.{field}[k])))",
            "message": f"{field}: every value must be a quantity, e.g. 500m, 2Gi or 4",
            "fieldPath": f".{field}",
        },
    ]


class Resources(SpecModel):
    """Compute resources of a container, as in a Pod spec."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                *_map_rules("requests"),
                *_map_rules("limits"),
                {
                    "rule": "!has(self.requests) || !has(self.limits) || self.requests.all(k, "
                    "!(k in self.limits) || !isQuantity(string(self.requests[k])) || "
                    "!isQuantity(string(self.limits[k])) || quantity(string(self.requests[k]))"
                    ".compareTo(quantity(string(self.limits[k]))) <= 0)",
                    "message": "requests: a request must not exceed its limit",
                    "fieldPath": ".requests",
                },
            ]
        }
    )

    requests: dict[str, Quantity] | None = Field(
        default=None,
        description="Minimum resources reserved for the container, e.g. {cpu: 500m, memory: 1Gi}.",
        json_schema_extra=_quantity_map,
    )
    limits: dict[str, Quantity] | None = Field(
        default=None,
        description="Maximum resources the container may use, e.g. {memory: 2Gi}.",
        json_schema_extra=_quantity_map,
    )

    @model_validator(mode="after")
    def _check(self) -> Resources:
        values: dict[str, dict[str, Any]] = {}
        for field in ("requests", "limits"):
            found = getattr(self, field) or {}
            if len(found) > MAX_RESOURCE_NAMES:
                raise ValueError(f"{field}: at most {MAX_RESOURCE_NAMES} resource names")
            values[field] = {}
            for name, value in found.items():
                if not valid_resource_name(name):
                    raise ValueError(
                        f"{field}.{name}: a resource name is cpu, memory, ephemeral-storage, "
                        "hugepages-<size> or domain-qualified (e.g. nvidia.com/gpu)"
                    )
                if len(str(value)) > MAX_QUANTITY_CHARS:
                    raise ValueError(f"{field}.{name}: at most {MAX_QUANTITY_CHARS} characters")
                try:
                    values[field][name] = parse_quantity(value)
                except ValueError as err:
                    raise ValueError(f"{field}.{name}: {err}") from None
        for name, request in values["requests"].items():
            limit = values["limits"].get(name)
            if limit is not None and request > limit:
                raise ValueError(
                    f"requests.{name}: {self.requests[name]} exceeds "  # type: ignore[index]
                    f"limits.{name} ({self.limits[name]})"  # type: ignore[index]
                )
        return self


ConditionType = Literal["Ready", "Progressing", "Degraded", "JudgeIndependent", "ModelScaledToZero"]
ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(SpecModel):
    """One observation of the resource's state, in the style of metav1.Condition."""

    type: ConditionType = Field(
        description="Ready: everything it made serves. Progressing: a rollout is under way. "
        "Degraded: something it needs is missing or failing. JudgeIndependent (EvalSchedule): "
        "False when the judge is the agent's own model, grading its own answers. "
        "ModelScaledToZero (an AgentDeployment with spec.model.autoscaling): its model server "
        "sleeps at zero replicas."
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    reason: str = Field(
        pattern=r"^[A-Za-z]([A-Za-z0-9]*)$",
        max_length=1024,
        description="Stable CamelCase reason code for the last transition, e.g. AgentNotFound.",
    )
    message: str = Field(default="", max_length=32768, description="Human-readable detail.")
    observed_generation: int = Field(
        default=0, ge=0, description="metadata.generation of the spec this condition reflects."
    )
    last_transition_time: str = Field(
        description="When status last changed (RFC 3339); unchanged while the status holds.",
        json_schema_extra={"format": "date-time"},
    )


class StatusModel(SpecModel):
    """The head of every sleuth kind's status: the generation reconciled and the conditions.

    Each kind's status model adds its own fields after these two."""

    observed_generation: int | None = Field(
        default=None, description="metadata.generation of the spec last reconciled."
    )
    conditions: list[Condition] | None = Field(
        default=None,
        description="Ready, Progressing and Degraded, with reason and message.",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )


__all__ = [
    "API_VERSION",
    "DNS_NAME",
    "GROUP",
    "HTTPS_URL_PATTERN",
    "RELATIVE_PATH",
    "URL_PATTERN",
    "VERSION",
    "Condition",
    "ConditionStatus",
    "ConditionType",
    "DataKey",
    "LocalObjectRef",
    "ObjectName",
    "Quantity",
    "Resources",
    "SecretKeyRef",
    "SpecModel",
    "StatusModel",
    "VolumePath",
    "exactly_one_message",
    "exactly_one_rule",
]
