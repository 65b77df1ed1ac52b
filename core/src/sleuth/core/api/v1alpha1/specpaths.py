"""Where in a spec the Secret references, endpoints and images are, found in the models themselves.

The guardrails (:mod:`~sleuth.core.api.v1alpha1.secretuse`,
:mod:`~sleuth.core.api.v1alpha1.allowlists`) must see every such field of every kind, including
fields added later; so the paths come from walking each spec model's JSON schema, never from a
list kept by hand: a :class:`~sleuth.core.api.v1alpha1.common.SecretKeyRef` is a Secret
reference, a string with one of the URL patterns (:data:`ENDPOINT_PATTERNS`) is an endpoint, a
string field named ``image`` is an image. Paths are camelCase and relative to ``spec``
(``vectorSearch.embedding.endpoint``); an endpoint in the items of a list has ``[]`` after the
list's name (``agent.access.issuers[].jwksUrl``), and :func:`values_at` gives each item's value
with its index (``agent.access.issuers[1].jwksUrl``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from pydantic import BaseModel

from sleuth.core.api.v1alpha1.common import HTTPS_URL_PATTERN, URL_PATTERN

SECRET_REF_DEF = "SecretKeyRef"
ENDPOINT_PATTERNS = (URL_PATTERN, HTTPS_URL_PATTERN)


def _deref(node: dict[str, Any], defs: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(name of the definition, its schema) for a ``$ref`` node, else (None, node)."""
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        return name, defs[name]
    return None, node


def _walk(
    node: dict[str, Any], defs: dict[str, Any], path: str
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(path, definition name or "", schema) of ``node`` and of everything below it; the
    options of an ``anyOf`` (an Optional field) share its path, list items add ``[]``."""
    name, schema = _deref(node, defs)
    yield path, name or "", schema
    if name == SECRET_REF_DEF:
        return
    for option in schema.get("anyOf", []):
        yield from _walk(option, defs, path)
    for key, child in (schema.get("properties") or {}).items():
        yield from _walk(child, defs, f"{path}.{key}" if path else key)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, defs, f"{path}[]")


@cache
def _fields(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    schema = model.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    found: set[tuple[str, str]] = set()
    for path, name, node in _walk(schema, defs, ""):
        if name == SECRET_REF_DEF:
            found.add(("secret", path))
        elif node.get("type") == "string" and node.get("pattern") in ENDPOINT_PATTERNS:
            found.add(("endpoint", path))
        elif node.get("type") == "string" and path.rsplit(".", 1)[-1] == "image":
            found.add(("image", path))
    # Secret references and images are read with value_at (plain paths); endpoints with
    # values_at, and the CEL generator takes one list on the way: extend them first.
    listed = [p for kind, p in found if "[]" in p and (kind != "endpoint" or p.count("[]") > 1)]
    if listed:
        raise NotImplementedError(f"{model.__name__}: a guarded field inside a list: {listed}")
    return tuple(sorted(found))


def secret_ref_paths(model: type[BaseModel]) -> list[str]:
    """Paths (below ``spec``) of every Secret reference of ``model``."""
    return [p for kind, p in _fields(model) if kind == "secret"]


def endpoint_paths(model: type[BaseModel]) -> list[str]:
    """Paths (below ``spec``) of every URL the operator's children send requests to."""
    return [p for kind, p in _fields(model) if kind == "endpoint"]


def image_paths(model: type[BaseModel]) -> list[str]:
    """Paths (below ``spec``) of every container image."""
    return [p for kind, p in _fields(model) if kind == "image"]


def value_at(wire: dict[str, Any], path: str) -> Any:
    """The value at ``path`` of a spec's wire form (None when any step is absent)."""
    node: Any = wire
    for step in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(step)
    return node


def values_at(wire: dict[str, Any], path: str) -> list[tuple[str, Any]]:
    """(path with each list index filled in, value) of every value at ``path``, which may step
    into the items of lists (``a.list[].b``); absent steps give nothing."""
    found: list[tuple[str, Any]] = [("", wire)]
    for step in path.split("."):
        name, listed = (step[:-2], True) if step.endswith("[]") else (step, False)
        nxt: list[tuple[str, Any]] = []
        for where, node in found:
            value = node.get(name) if isinstance(node, dict) else None
            here = f"{where}.{name}" if where else name
            if value is None:
                continue
            if not listed:
                nxt.append((here, value))
            elif isinstance(value, list):
                nxt += [(f"{here}[{i}]", item) for i, item in enumerate(value)]
        found = nxt
    return found


__all__ = [
    "ENDPOINT_PATTERNS",
    "endpoint_paths",
    "image_paths",
    "secret_ref_paths",
    "value_at",
    "values_at",
]
