"""The operator's reasons have one home (:mod:`sleuth.operator.reasons`): every reason a
``Cond(...)`` in the operator's code writes is listed there, and every listed one is written."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from sleuth.operator.reasons import REASONS
from tests.support.paths import ROOT

pytestmark = pytest.mark.unit

SOURCE = ROOT / "operator" / "src" / "sleuth" / "operator"
# Calls whose third positional argument is a condition reason.
# (A guard's Refused(reason, message) and a child's Refusal(kind, name, detail, reason) carry the
# reason the resource's conditions get.)
REASON_CALLS = {"Cond": 2, "_without_children": 2, "Refused": 0, "Refusal": 3}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(SOURCE.parents[1]).with_suffix("").parts)


def _call_name(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def reasons_in(source: str, constants: object) -> list[tuple[str, int]]:
    """The reasons the ``Cond(...)`` calls of ``source`` write, with their line: literals (both
    branches of a conditional expression too), and names that are module constants of
    ``constants`` (the imported module). A name bound at run time (a parameter,
    ``progressing.reason``) passes on a reason written elsewhere and is skipped."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        # ``reason = CONSTANT`` before a ``Cond(..., reason, ...)``: the constant is written.
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["reason"]
            and isinstance(node.value, ast.Name)
            and isinstance(getattr(constants, node.value.id, None), str)
        ):
            found.append((getattr(constants, node.value.id), node.lineno))
            continue
        # ``for reason, ... in ((CONSTANT, ...), ...)``: each constant is written.
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Tuple)
            and getattr(node.target.elts[0], "id", None) == "reason"
            and isinstance(node.iter, ast.Tuple)
        ):
            for row in node.iter.elts:
                first = row.elts[0] if isinstance(row, ast.Tuple) else None
                if isinstance(first, ast.Name):
                    constant = getattr(constants, first.id, None)
                    if isinstance(constant, str):
                        found.append((constant, node.lineno))
            continue
        if not isinstance(node, ast.Call) or _call_name(node) not in REASON_CALLS:
            continue
        index = REASON_CALLS[_call_name(node)]
        if len(node.args) <= index:
            continue
        arg = node.args[index]
        values = [arg.body, arg.orelse] if isinstance(arg, ast.IfExp) else [arg]
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append((value.value, node.lineno))
            elif isinstance(value, ast.Name):
                constant = getattr(constants, value.id, None)
                if isinstance(constant, str):
                    found.append((constant, node.lineno))
    return found


def written_reasons() -> dict[str, list[str]]:
    """reason -> where the operator's code writes it (file:line)."""
    found: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        module = importlib.import_module(_module(path))
        for reason, line in reasons_in(path.read_text(encoding="utf-8"), module):
            found.setdefault(reason, []).append(f"{path.name}:{line}")
    return found


def test_every_reason_written_is_in_the_table_and_every_listed_one_is_written() -> None:
    written = written_reasons()
    unlisted = {r: where for r, where in written.items() if r not in REASONS}
    assert not unlisted, f"reasons written but not in sleuth.operator.reasons: {unlisted}"
    never = set(REASONS) - set(written)
    assert not never, f"listed in sleuth.operator.reasons but never written: {sorted(never)}"


def test_the_table_and_the_doc_list_the_same_reasons() -> None:
    doc = (ROOT / "docs" / "operator.md").read_text(encoding="utf-8")
    table = doc[doc.index("| Reason | Condition | Meaning |") :].split("\n\n")[0]
    for reason in REASONS:
        assert f"`{reason}`" in table, f"docs/operator.md's reason table lacks {reason}"


def test_a_made_up_reason_in_the_code_is_caught() -> None:
    """What a new, unlisted reason looks like to the walk: found, and not in the table."""
    source = (
        'Cond("Degraded", "True", "SecretKeyNotFound", "x")\n'
        'Cond("Ready", "False", "A" if x else "B", "y")\n'
        "Cond('Ready', 'False', MADE_UP, 'z')\n"
    )
    constants = type("M", (), {"MADE_UP": "MadeUpReason"})
    found = [r for r, _ in reasons_in(source, constants)]
    assert found == ["SecretKeyNotFound", "A", "B", "MadeUpReason"]
    assert not set(found) & set(REASONS)
