"""The CustomResourceDefinition of each kind, from its pydantic spec and status models.

Pydantic's JSON Schema is turned into a Kubernetes structural schema: ``$ref`` inlined,
``Optional`` unwrapped (absence is how a CRD says "unset"), ``str | int`` as int-or-string,
titles dropped, ``x-kubernetes-*`` extensions and CEL rules kept from the models. Pure: the
files in ``crds/`` (:mod:`sleuth.core.api.crdgen`) and the field reference of docs/operator.md
(:mod:`sleuth.core.api.crddocs`) are both rendered from :func:`crd`.
"""

from __future__ import annotations

from typing import Any

from sleuth.core.api.v1alpha1.kinds import CATEGORY, Kind

_DROP = {"title", "$defs"}


def _is_null(node: dict[str, Any]) -> bool:
    return node.get("type") == "null"


def _structural(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One pydantic JSON Schema node → a structural OpenAPI v3 node."""
    node = dict(node)
    if "$ref" in node:
        target = defs[node.pop("$ref").rsplit("/", 1)[-1]]
        node = {**_structural(target, defs), **node}
    if "anyOf" in node:
        options = [o for o in node.pop("anyOf") if not _is_null(o)]
        if node.get("default", 0) is None:
            node.pop("default")
        types = sorted(o.get("type", "") for o in options)
        if types == ["integer", "string"]:
            node["x-kubernetes-int-or-string"] = True
        elif len(options) == 1:
            node = {**_structural(options[0], defs), **node}
        else:  # pragma: no cover - the models do not use other unions
            raise ValueError(f"cannot express union {options} in a structural schema")
    if "const" in node:  # a one-value Literal; CRD schemas have no `const`
        node["enum"] = [node.pop("const")]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROP:
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _structural(value, defs)
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out and "additionalProperties" in out:
        out.pop("additionalProperties")  # extra="forbid" is what pruning does anyway
    first = [k for k in ("type", "description") if k in out]
    return {k: out[k] for k in [*first, *sorted(k for k in out if k not in first)]}


def model_schema(model: Any) -> dict[str, Any]:
    """The structural schema of a pydantic model (camelCase field names)."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = raw.get("$defs", {})
    return _structural(raw, defs)


def crd(kind: Kind) -> dict[str, Any]:
    """The CustomResourceDefinition of ``kind``."""
    spec = model_schema(kind.spec)
    status = model_schema(kind.status)
    root: dict[str, Any] = {
        "type": "object",
        "description": kind.description,
        "required": ["spec"],
        "properties": {
            "apiVersion": {
                "type": "string",
                "description": f"API version of this object: {kind.group}/{kind.version}.",
            },
            "kind": {"type": "string", "description": f"Kind of this object: {kind.kind}."},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    if kind.root_rules:
        root["x-kubernetes-validations"] = [dict(rule) for rule in kind.root_rules]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": kind.crd_name,
            "labels": {"app.kubernetes.io/name": "sleuth", "app.kubernetes.io/part-of": "sleuth"},
        },
        "spec": {
            "group": kind.group,
            "scope": "Namespaced",
            "names": {
                "kind": kind.kind,
                "listKind": f"{kind.kind}List",
                "plural": kind.plural,
                "singular": kind.singular,
                "shortNames": list(kind.short_names),
                "categories": [CATEGORY],
            },
            "versions": [
                {
                    "name": kind.version,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [dict(c) for c in kind.columns],
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }
