"""The field reference of docs/operator.md, generated from the same schemas as the CRDs.

sleuth crds generate            # also rewrites the reference section of docs/operator.md
sleuth crds generate --check    # exit 1 when the CRDs or that section are out of date
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sleuth.core.api.crdschema import crd
from sleuth.core.api.v1alpha1.kinds import KINDS, Kind

BEGIN = "<!-- BEGIN GENERATED REFERENCE (sleuth crds generate) -->"
END = "<!-- END GENERATED REFERENCE -->"


def _type(node: dict[str, Any]) -> str:
    if node.get("x-kubernetes-int-or-string"):
        return "int or string"
    kind = str(node.get("type", ""))
    if kind == "array":
        return f"[]{_type(node.get('items', {}))}"
    if kind == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"map[string]{_type(node['additionalProperties'])}"
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    return kind


def _rows(node: dict[str, Any], path: str, required: bool) -> list[str]:
    rows = []
    if path:
        default = node.get("default")
        shown = "" if default is None else f"`{default}`"
        flag = " (required)" if required else ""
        text = " ".join(str(node.get("description", "")).split()).replace("|", "\\|")
        rows.append(f"| `{path}`{flag} | {_type(node)} | {shown} | {text} |")
    target = node.get("items", node) if node.get("type") == "array" else node
    needed = set(target.get("required", []))
    for name, sub in target.get("properties", {}).items():
        rows += _rows(sub, f"{path}.{name}" if path else name, name in needed)
    return rows


def _rules(node: dict[str, Any], path: str) -> list[str]:
    target = node.get("items", node) if node.get("type") == "array" else node
    rules = node.get("x-kubernetes-validations", [])
    if target is not node:
        rules = rules + target.get("x-kubernetes-validations", [])
    found = [f"- {r['message']}" for r in rules]
    for name, sub in target.get("properties", {}).items():
        found += _rules(sub, f"{path}.{name}")
    return found


def kind_reference(kind: Kind) -> str:
    version = crd(kind)["spec"]["versions"][0]
    root = version["schema"]["openAPIV3Schema"]
    spec = root["properties"]["spec"]
    status = root["properties"]["status"]
    lines = [
        f"### {kind.kind} (`{kind.group}/{kind.version}`)",
        "",
        " ".join(kind.description.split()),
        "",
        f"Short names: {', '.join(f'`{s}`' for s in kind.short_names)}; category `sleuth`. "
        f"Columns: {', '.join(c['name'] for c in kind.columns)}.",
        "",
        "| Field | Type | Default | Description |",
        "|---|---|---|---|",
        *_rows(spec, "spec", True)[1:],
        "",
        "Checked by the apiserver (CEL):",
        "",
        *[f"- {r['message']}" for r in root.get("x-kubernetes-validations", [])],
        *_rules(spec, "spec"),
        "",
        "Status:",
        "",
        "| Field | Type | Default | Description |",
        "|---|---|---|---|",
        *_rows(status, "status", False)[1:],
        "",
    ]
    return "\n".join(lines)


def reference() -> str:
    return "\n".join(kind_reference(k) for k in KINDS)


def updated(text: str) -> str:
    """``text`` with the section between the markers replaced by the current reference."""
    head, sep, rest = text.partition(BEGIN)
    if not sep:
        raise ValueError(f"docs/operator.md has no {BEGIN!r} marker")
    _, sep, tail = rest.partition(END)
    if not sep:
        raise ValueError(f"docs/operator.md has no {END!r} marker")
    return f"{head}{BEGIN}\n\n{reference()}\n{END}{tail}"


def sync(path: Path, *, check: bool = False) -> bool:
    """Rewrite the reference in ``path`` (unless ``check``); True when it was out of date."""
    if not path.exists():
        return False
    text = path.read_text(encoding="utf-8")
    new = updated(text)
    if new != text and not check:
        path.write_text(new, encoding="utf-8")
    return new != text


__all__ = ["BEGIN", "END", "kind_reference", "reference", "sync", "updated"]
