"""JSONL reading and writing with validation errors that name the file, line and field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from sleuth.core.errors import DatasetError

M = TypeVar("M", bound=BaseModel)


def _field_path(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def parse_lines(lines: Iterable[str], model: type[M], *, path: str = "<data>") -> list[M]:
    """Validate every non-blank line as ``model``; the first bad line raises :class:`DatasetError`.

    Lines starting with ``//`` are comments. Duplicate ``id`` values are refused too, since
    results are reported per id.
    """
    records: list[M] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("//"):
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"not valid JSON ({exc.msg})", path=path, line=number) from None
        if not isinstance(data, dict):
            raise DatasetError("each line must be a JSON object", path=path, line=number)
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise DatasetError(
                first["msg"], path=path, line=number, field=_field_path(first["loc"])
            ) from None
        record_id = getattr(record, "id", None)
        if isinstance(record_id, str):
            if record_id in seen:
                raise DatasetError(
                    f"duplicate id {record_id!r} (first on line {seen[record_id]})",
                    path=path,
                    line=number,
                    field="id",
                )
            seen[record_id] = number
        records.append(record)
    return records


def load_jsonl(path: Path | str, model: type[M]) -> list[M]:
    """Read and validate a JSONL file (UTF-8)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot read: {exc.strerror}", path=str(p)) from None
    return parse_lines(text.splitlines(), model, path=str(p))


def dump_jsonl(records: Iterable[BaseModel], path: Path | str) -> None:
    """Write records one per line (aliases used, ``None`` fields left out), atomically."""
    p = Path(path)
    tmp = p.with_suffix(p.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(record.model_dump_json(by_alias=True, exclude_none=True))
            fh.write("\n")
    tmp.replace(p)
