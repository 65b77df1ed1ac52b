"""The cron expander behind RAGEvalStale: the longest gap between consecutive runs."""

from __future__ import annotations

import datetime as dt

import pytest

from sleuth.api.v1alpha1.evalschedule import check_cron
from sleuth.operator.render.cron import CronError, longest_gap_seconds, parse

pytestmark = pytest.mark.unit

MINUTE, HOUR, DAY = 60, 3600, 86400


@pytest.mark.parametrize(
    ("schedule", "gap"),
    [
        ("* * * * *", MINUTE),
        ("*/15 * * * *", 15 * MINUTE),
        ("*/7 * * * *", 7 * MINUTE),  # :56 to :00 is shorter; :00 to :07 is the longest
        ("0 */6 * * *", 6 * HOUR),
        ("0 3 * * *", DAY),
        ("0 1,2,23 * * *", 21 * HOUR),
        ("0 8-18/2 * * 1-5", (2 * DAY + 14 * HOUR)),  # Friday 18:00 to Monday 08:00
        ("30 2 * * MON-FRI", 3 * DAY),
        ("30 2 * * 0,7", 7 * DAY),  # 7 is Sunday too
        ("0 0 1 * *", 31 * DAY),
        ("15 3 */2 * *", 2 * DAY),  # the 31st to the 1st is one day; the 29th (30-day month) two
        ("0 0 1 JAN,jul ?", 184 * DAY),  # 1 July to 1 January
        ("0 0 1 1 *", 366 * DAY),  # across a leap year
        ("0 0 29 2 *", (4 * 365 + 1) * DAY),  # leap days only
        ("0 9 13 * 5", 7 * DAY),  # the 13th OR a Friday (both restricted)
        ("0 9 * * 5/2", 5 * DAY),  # 5/2 runs 5 to 7 by 2: Friday and Sunday (7)
    ],
)
def test_longest_gap(schedule: str, gap: int) -> None:
    check_cron(schedule)  # a schedule the EvalSchedule accepts
    assert longest_gap_seconds(schedule) == gap


def test_day_of_month_and_weekday_both_restricted_means_either() -> None:
    cron = parse("0 9 13 * 5")
    assert not cron.days.star
    assert not cron.weekdays.star
    friday_the_first = dt.date(2027, 1, 1)
    assert cron.fires_on(friday_the_first)  # a Friday, not the 13th


def test_a_star_with_a_step_restricts_its_field() -> None:
    assert not parse("0 0 */2 * 1").days.star  # so day 1, 3, ... OR Mondays
    assert longest_gap_seconds("0 0 */2 * 1") == 2 * DAY


def test_a_schedule_that_never_fires_has_no_gap() -> None:
    assert longest_gap_seconds("0 0 30 2 *") is None
    assert longest_gap_seconds("0 0 31 4,6,9,11 *") is None


@pytest.mark.parametrize("schedule", ["0 0 * * FOO", "0 0 5-1 * *", "0 0 * * */0", "0 0 * *"])
def test_unreadable_schedules_are_refused(schedule: str) -> None:
    with pytest.raises(CronError):
        longest_gap_seconds(schedule)
