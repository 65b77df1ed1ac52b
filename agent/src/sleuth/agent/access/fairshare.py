"""A fair share of ``maxConcurrentRequests`` per caller, so that a noisy caller meets 429 first.

The agent serves at most ``limit`` requests at once. A caller alone may use all of them; once
``k`` callers are *active* — a request in flight, or one seen in the last :data:`ACTIVE_WINDOW_S`
seconds (refused ones included) — each may hold at most ``ceil(limit / k)``. So a caller that
floods the agent is refused at its share while the others still get in; and a newcomer that
found the agent full (its first request refused) counts as active from then on, which holds the
flooding caller to its share at once, so the newcomer's retry gets the next free slot.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ACTIVE_WINDOW_S = 10.0


@dataclass
class FairShare:
    limit: int
    clock: Callable[[], float] = time.monotonic
    in_flight: dict[str, int] = field(default_factory=dict)
    seen: dict[str, float] = field(default_factory=dict)
    total: int = 0

    def _active(self, now: float) -> int:
        stale = [c for c, t in self.seen.items() if now - t > ACTIVE_WINDOW_S]
        for caller in stale:
            if not self.in_flight.get(caller):
                del self.seen[caller]
        return len(self.seen)

    def share(self, caller: str) -> int:
        """What ``caller`` may hold now."""
        now = self.clock()
        self.seen[caller] = now
        return max(1, math.ceil(self.limit / max(1, self._active(now))))

    def try_acquire(self, caller: str) -> str | None:
        """Take a slot for ``caller``; None when taken, else why not (``full`` or ``share``)."""
        share = self.share(caller)
        if self.total >= self.limit:
            return "full"
        if self.in_flight.get(caller, 0) >= share:
            return "share"
        self.in_flight[caller] = self.in_flight.get(caller, 0) + 1
        self.total += 1
        return None

    def release(self, caller: str) -> None:
        held = self.in_flight.get(caller, 0)
        if held <= 0:
            return
        self.total -= 1
        if held == 1:
            del self.in_flight[caller]
        else:
            self.in_flight[caller] = held - 1
        self.seen[caller] = self.clock()


__all__ = ["ACTIVE_WINDOW_S", "FairShare"]
