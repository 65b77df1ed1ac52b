"""The status writer's retry policy on top of sleuth.core.kube's errors, without a cluster.

409 is redone from a fresh read, retryable errors back off until the deadline, a refusal or a
missing EvalSchedule fails at once and names it (the real API server: test_status_cluster.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from sleuth.core.errors import KubeConflict, KubeRejected, KubeRetryable
from sleuth.core.kube import EVAL_SCHEDULE, Resource
from sleuth.evals.status import RunContext, StatusError, StatusTarget, failed_part
from sleuth.evals.statuswriter import RetryPolicy, StatusWriter

pytestmark = pytest.mark.unit

TARGET = StatusTarget("team-a", "nightly")
PART = failed_part("tsa", None, "stopped", finished_at="2026-01-01T00:00:00Z")
RUN = RunContext("job-1", 2)


class FakeKube:
    """Answers each call with the next scripted outcome (an object, None, or an error)."""

    def __init__(self, reads: list[Any], writes: list[Any]) -> None:
        self.reads, self.writes = iter(reads), iter(writes)
        self.calls: list[tuple[str, Any]] = []

    @staticmethod
    def _next(outcomes: Iterator[Any]) -> Any:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def get(self, resource: Resource, namespace: str, name: str, sub: str | None = None) -> Any:
        assert (resource, namespace, name, sub) == (EVAL_SCHEDULE, "team-a", "nightly", "status")
        self.calls.append(("get", None))
        return self._next(self.reads)

    def patch_status(
        self, resource: Resource, namespace: str, name: str, status: Any, resource_version: str
    ) -> Any:
        self.calls.append(("patch", resource_version))
        return self._next(self.writes)


def _obj(version: str) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": version}, "status": {}}


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda _s: None)  # the writer backs off with time.sleep


def _writer(kube: FakeKube, deadline: float = 60.0) -> StatusWriter:
    writer = StatusWriter(None, TARGET, RetryPolicy(deadline_s=deadline))
    writer._kube = kube  # type: ignore[assignment]
    return writer


def test_a_conflict_is_redone_on_a_fresh_read() -> None:
    kube = FakeKube([_obj("1"), _obj("2")], [KubeConflict("409"), {}])
    new = _writer(kube).write_part(PART, RUN)
    assert [p["name"] for p in new["currentRun"]["parts"]] == ["tsa-0"]
    assert kube.calls == [("get", None), ("patch", "1"), ("get", None), ("patch", "2")]


def test_retryable_errors_are_retried_until_they_pass() -> None:
    kube = FakeKube([KubeRetryable("503"), KubeRetryable("timeout"), _obj("7")], [{}])
    _writer(kube).write_part(PART, RUN)
    assert kube.calls == [("get", None)] * 3 + [("patch", "7")]


def test_retryable_errors_past_the_deadline_give_up_naming_the_schedule() -> None:
    kube = FakeKube([KubeRetryable("HTTP 503: overloaded")], [])
    with pytest.raises(StatusError, match=r"cannot read EvalSchedule team-a/nightly: gave up"):
        _writer(kube, deadline=0.0).read()


def test_a_refusal_fails_at_once_with_its_hint() -> None:
    kube = FakeKube([_obj("1")], [KubeRejected(403, "PATCH ...: forbidden")])
    with pytest.raises(StatusError) as err:
        _writer(kube).write_part(PART, RUN)
    assert "cannot write the status of EvalSchedule team-a/nightly: HTTP 403" in str(err.value)
    assert "needs get and patch on evalschedules/status" in str(err.value)
    assert len(kube.calls) == 2  # no retry


def test_a_missing_schedule_fails_at_once_as_404() -> None:
    kube = FakeKube([None], [])
    with pytest.raises(
        StatusError, match=r"team-a/nightly: HTTP 404 .*does the EvalSchedule exist"
    ):
        _writer(kube).read()
