"""Tool result cache keyed by (tool, canonical arguments), each entry with its own TTL.

Arguments are compared in their canonical form (:func:`sleuth.tools.wire.canonical_arguments`),
so ``{"b": 1, "a": 2}`` and ``{"a":2,"b":1}`` share an entry. Bounded: the oldest entries go first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sleuth.tools.base import ToolOutput
from sleuth.tools.wire import canonical_arguments


class ToolCache:
    """An in-memory TTL cache shared by all requests of one agent process."""

    def __init__(
        self, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, ToolOutput]] = OrderedDict()
        self._max = max_entries
        self._clock = clock

    def get(self, tool: str, arguments: dict[str, Any]) -> ToolOutput | None:
        key = (tool, canonical_arguments(arguments))
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires, output = entry
        if self._clock() >= expires:
            del self._entries[key]
            return None
        return output

    def put(self, tool: str, arguments: dict[str, Any], output: ToolOutput, ttl_s: float) -> None:
        if ttl_s <= 0:
            return
        key = (tool, canonical_arguments(arguments))
        self._entries[key] = (self._clock() + ttl_s, output)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
