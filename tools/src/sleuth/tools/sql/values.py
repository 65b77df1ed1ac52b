"""Faithful JSON for PostgreSQL values: nothing is rounded, every value keeps its meaning.

- ``numeric`` (Decimal) → its exact decimal string (``"8300000.00"``): a JSON float would round;
  NaN and infinities become ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
- ``float4/float8`` → JSON numbers; NaN and infinities → the same strings as above.
- ``date`` → ``"2025-03-01"``; ``timestamp`` → ISO 8601 (with its offset when it has one);
  ``time`` → ``"13:45:00"``; ``interval`` → ISO 8601 duration (``"P1DT3600S"``).
- ``bytea`` → ``"\\x..."`` (PostgreSQL's hex form); ``uuid`` and other scalars → their string.
- arrays → lists; composite records → objects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def _number_special(value: float | Decimal) -> str | None:
    if isinstance(value, Decimal):
        if value.is_nan():
            return "NaN"
        if value.is_infinite():
            return "Infinity" if value > 0 else "-Infinity"
        return None
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return None


def _duration(value: timedelta) -> str:
    sign = "-" if value < timedelta(0) else ""
    value = abs(value)
    seconds = value.seconds + value.microseconds / 1_000_000
    text = f"{seconds:f}".rstrip("0").rstrip(".") if value.microseconds else str(value.seconds)
    return f"{sign}P{value.days}DT{text}S"


def to_json(value: Any) -> JsonValue:
    """``value`` as read by asyncpg, converted to a JSON-safe value without loss."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        return _number_special(value) or format(value, "f")
    if isinstance(value, float):
        return _number_special(value) or value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return _duration(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    items = getattr(value, "items", None)
    if callable(items):  # asyncpg.Record of a composite type
        return {str(k): to_json(v) for k, v in items()}
    return str(value)
