"""A keyed work queue: events and the resync add keys, a few worker threads drain them.

The rules (those of controller-runtime's workqueue, which careful operators copy):

- **Dedupe.** A key waiting in the queue is queued once, however often it is added.
- **One at a time per key.** A key being processed is not handed to another worker; added while
  it runs, it is queued again when it finishes (so the change that woke it is seen: one more run).
- **Back-off per key.** :meth:`WorkQueue.retry` puts a key back after ``base * 2**(n-1)`` seconds
  for its n-th failure in a row, capped at ``cap``; :meth:`WorkQueue.forget` (a success, or a
  permanent error that only a change can fix) resets the count. An :meth:`add` is immediate even
  while a retry is pending: an event may carry the fix.
- **Shutdown.** :meth:`WorkQueue.shut_down` stops handing out keys; :meth:`WorkQueue.wait_idle`
  waits (bounded) for the keys in flight.

Thread-safe: kopf's event loop adds, worker threads (:func:`run_workers`) get and finish.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Backoff:
    """Per-key exponential back-off: ``base`` seconds after the first failure, doubling, at most
    ``cap`` seconds."""

    base: float = 0.5
    cap: float = 60.0

    def delay(self, failures: int) -> float:
        if failures <= 0:
            return 0.0
        return float(min(self.cap, self.base * 2 ** min(failures - 1, 62)))


@dataclass
class WorkQueue(Generic[K]):
    """Keys to process: deduplicated, never one key in two workers, retried with back-off."""

    backoff: Backoff = field(default_factory=Backoff)
    clock: Callable[[], float] = time.monotonic
    _ready: deque[K] = field(default_factory=deque)
    _queued: set[K] = field(default_factory=set)
    _running: set[K] = field(default_factory=set)
    _again: set[K] = field(default_factory=set)
    _failures: dict[K, int] = field(default_factory=dict)
    _later: list[tuple[float, int, K]] = field(default_factory=list)
    _seq: int = 0
    _closed: bool = False
    _cond: threading.Condition = field(default_factory=threading.Condition)

    def add(self, key: K) -> None:
        """Queue ``key`` now (once; after its current run if it is running)."""
        with self._cond:
            if self._closed:
                return
            if key in self._running:
                self._again.add(key)
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
                self._cond.notify()

    def retry(self, key: K) -> float:
        """Count a failure of ``key`` and queue it again after its back-off; returns the delay."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            delay = self.backoff.delay(failures)
            self._seq += 1
            heapq.heappush(self._later, (self.clock() + delay, self._seq, key))
            self._cond.notify()
            return delay

    def forget(self, key: K) -> None:
        """Reset the failure count of ``key`` (it succeeded, or retrying cannot help)."""
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to process (now marked running), or None on shutdown or timeout."""
        deadline = None if timeout is None else self.clock() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._promote()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    self._running.add(key)
                    return key
                wait = self._next_due()
                if deadline is not None:
                    left = deadline - self.clock()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        """``key`` finished; queue it once more if it was added while it ran."""
        with self._cond:
            self._running.discard(key)
            again = key in self._again
            self._again.discard(key)
            self._cond.notify_all()
        if again:
            self.add(key)

    def shut_down(self) -> None:
        """Hand out no more keys; workers waiting in :meth:`get` return None."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until no key is running; whether none is."""
        deadline = self.clock() + timeout
        with self._cond:
            while self._running:
                left = deadline - self.clock()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def __len__(self) -> int:
        """Keys waiting now (ready, not delayed)."""
        with self._cond:
            return len(self._ready)

    def running(self) -> int:
        with self._cond:
            return len(self._running)

    def _promote(self) -> None:
        """Move retries whose time has come into the ready queue (caller holds the lock)."""
        now = self.clock()
        while self._later and self._later[0][0] <= now:
            _, _, key = heapq.heappop(self._later)
            if key in self._running:
                self._again.add(key)
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)

    def _next_due(self) -> float | None:
        if not self._later:
            return None
        return max(0.0, self._later[0][0] - self.clock())


def run_workers(
    queue: WorkQueue[K], process: Callable[[K], None], count: int, name: str = "worker"
) -> list[threading.Thread]:
    """Start ``count`` daemon threads that call ``process(key)`` for each key until shutdown.

    ``process`` decides retry or forget; whatever it raises is its own bug and is not allowed to
    kill the thread (the key is retried with back-off).
    """

    def loop() -> None:
        while True:
            key = queue.get()
            if key is None:
                return
            try:
                process(key)
            except Exception:  # a bug in process: keep the worker, back the key off
                queue.retry(key)
            finally:
                queue.done(key)

    threads = [threading.Thread(target=loop, name=f"{name}-{i}", daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads


__all__ = ["Backoff", "WorkQueue", "run_workers"]
