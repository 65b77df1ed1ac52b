"""Identical calls in flight share one execution (per agent process, and per tool service).

``await flights.run(key, call)`` runs ``call()`` unless an execution with the same key is already
running, in which case it waits for that one and gets its result (or its exception). The
execution runs as its own task: a caller that gives up (its timeout fires, its client goes away)
stops waiting without cancelling the others' execution — and when the last caller has given up,
the execution is cancelled, so abandoned work (a SQL statement, say) stops.

Nothing is kept once an execution ends: results are the cache's business
(:mod:`sleuth.agent.cache`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(slots=True)
class _Flight(Generic[T]):
    task: asyncio.Task[T]
    waiters: int = 0


class SingleFlight(Generic[T]):
    """Deduplicates concurrent executions by key."""

    def __init__(self) -> None:
        self._flights: dict[Hashable, _Flight[T]] = {}

    def __len__(self) -> int:
        return len(self._flights)

    def in_flight(self, key: Hashable) -> bool:
        return key in self._flights

    async def run(
        self,
        key: Hashable,
        call: Callable[[], Awaitable[T]],
        on_done: Callable[[], None] | None = None,
    ) -> tuple[T, bool]:
        """``(result, shared)``: ``shared`` is True when another caller's execution answered.

        ``on_done`` is called once when an execution this call started ends, however it ends
        (even cancelled before it began)."""
        flight = self._flights.get(key)
        shared = flight is not None
        if flight is None:
            flight = _Flight(asyncio.ensure_future(call()))
            self._flights[key] = flight
            flight.task.add_done_callback(lambda _: self._forget(key, flight))
            if on_done is not None:
                flight.task.add_done_callback(lambda _: on_done())
        flight.waiters += 1
        try:
            result = await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            flight.waiters -= 1
            if flight.waiters == 0 and not flight.task.done():
                flight.task.cancel()  # nobody wants it any more
            raise
        flight.waiters -= 1
        return result, shared

    def _forget(self, key: Hashable, flight: _Flight[T]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]


__all__ = ["SingleFlight"]
