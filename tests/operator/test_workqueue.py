"""The keyed work queue: dedupe, one run per key at a time, a rerun after an add while running,
back-off per key that really retries, shutdown."""

from __future__ import annotations

import threading
import time

import pytest

from sleuth.operator.loop.workqueue import Backoff, WorkQueue, run_workers
from tests.support.polling import eventually

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_many_times_is_queued_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    queue.add("a")
    assert len(queue) == 2
    assert [queue.get(0), queue.get(0), queue.get(0)] == ["a", "b", None]


def test_a_running_key_is_not_handed_out_and_runs_once_more_after() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get(0) == "a"
    queue.add("a")  # an event while it runs
    queue.add("a")
    assert queue.get(0) is None  # not to a second worker
    queue.done("a")
    assert queue.get(0) == "a"  # once more, for the change that came in
    queue.done("a")
    assert queue.get(0) is None


def test_backoff_doubles_per_failure_up_to_the_cap_and_resets_on_forget() -> None:
    backoff = Backoff(base=0.5, cap=4.0)
    assert [backoff.delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(backoff=backoff, clock=clock)
    queue.add("a")
    delays = []
    for _ in range(4):
        assert queue.get(0) == "a"
        delays.append(queue.retry("a"))
        queue.done("a")
        assert queue.get(0) is None  # not before its delay
        clock.now += delays[-1]
    assert delays == [0.5, 1.0, 2.0, 4.0]
    assert queue.get(0) == "a"  # the retry really comes back
    queue.forget("a")
    assert queue.failures("a") == 0
    assert queue.retry("a") == 0.5


def test_an_add_is_immediate_while_a_retry_is_pending_and_the_retry_dedupes() -> None:
    clock = Clock()
    queue: WorkQueue[str] = WorkQueue(backoff=Backoff(base=10, cap=10), clock=clock)
    queue.add("a")
    assert queue.get(0) == "a"
    queue.retry("a")
    queue.done("a")
    queue.add("a")  # an event that may carry the fix
    assert queue.get(0) == "a"
    queue.done("a")
    clock.now += 10
    queue.add("a")
    assert queue.get(0) == "a"  # the due retry and the add are one run
    queue.done("a")
    assert queue.get(0) is None


def test_workers_never_run_one_key_twice_at_once_and_retry_failures() -> None:
    queue: WorkQueue[int] = WorkQueue(backoff=Backoff(base=0.01, cap=0.05))
    running: set[int] = set()
    overlap: list[int] = []
    runs: dict[int, int] = {}
    guard = threading.Lock()

    def process(key: int) -> None:
        with guard:
            if key in running:
                overlap.append(key)
            running.add(key)
            runs[key] = runs.get(key, 0) + 1
            failing = key == 0 and runs[key] < 4  # key 0 fails three times, then succeeds
        time.sleep(0.005)
        with guard:
            running.discard(key)
        if failing:
            queue.retry(key)
        else:
            queue.forget(key)

    threads = run_workers(queue, process, count=4)
    try:
        for _ in range(20):
            for key in range(5):
                queue.add(key)
            time.sleep(0.002)
        eventually(lambda: runs.get(0, 0) >= 4 and queue.running() == 0 and len(queue) == 0)
    finally:
        queue.shut_down()
        for thread in threads:
            thread.join(timeout=5)
    assert overlap == []
    assert all(runs[key] >= 1 for key in range(5))
    assert queue.failures(0) == 0
    assert not any(t.is_alive() for t in threads)


def test_a_worker_survives_a_process_that_raises() -> None:
    queue: WorkQueue[str] = WorkQueue(backoff=Backoff(base=0.01, cap=0.01))
    seen: list[str] = []

    def process(key: str) -> None:
        seen.append(key)
        if len(seen) == 1:
            raise RuntimeError("a bug")
        queue.forget(key)

    (thread,) = run_workers(queue, process, count=1)
    try:
        queue.add("a")
        eventually(lambda: len(seen) >= 2, timeout=10)  # retried after the bug, same thread
    finally:
        queue.shut_down()
        thread.join(timeout=5)
    assert seen[:2] == ["a", "a"]


def test_shutdown_hands_out_nothing_more_and_waits_for_work_in_flight() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("b")
    assert queue.get(0) == "a"
    queue.shut_down()
    assert queue.get(0) is None
    queue.add("c")
    assert queue.wait_idle(0.05) is False  # "a" is still running
    threading.Timer(0.05, queue.done, args=("a",)).start()
    assert queue.wait_idle(5) is True
