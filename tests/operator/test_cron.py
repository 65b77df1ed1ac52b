"""The cron expander behind RAGEvalStale: the longest gap between consecutive runs."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.core.api.v1alpha1.cronschedule import check_cron
from sleuth.operator.render.cron import (
    MONTHS,
    WEEKDAYS,
    CronError,
    longest_gap_seconds,
    parse,
)

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


def _text(values: list[int], names: tuple[str, ...] | None, offset: int, style: int) -> str:
    """A field's text: a comma list (of numbers or names), or a range when contiguous."""
    ordered = sorted(values)
    contiguous = ordered == list(range(ordered[0], ordered[-1] + 1))
    if style == 1 and contiguous and len(ordered) > 1:
        return f"{ordered[0]}-{ordered[-1]}"
    if style == 2 and names is not None:
        return ",".join(names[v - offset] for v in ordered)
    return ",".join(str(v) for v in ordered)


def _oracle(
    minutes: set[int],
    hours: set[int],
    days: set[int] | None,
    months: set[int],
    weekdays: set[int] | None,
) -> int | None:
    """Every run over the span, listed one by one; ``None`` for a day field means '*'."""
    runs: list[dt.datetime] = []
    day = dt.date(2001, 1, 1)
    while day.year < 2029:
        dom = days is None or day.day in days
        dow = weekdays is None or day.isoweekday() % 7 in weekdays
        both_restricted = days is not None and weekdays is not None
        if day.month in months and ((dom or dow) if both_restricted else (dom and dow)):
            start = dt.datetime(day.year, day.month, day.day)
            runs += [start + dt.timedelta(hours=h, minutes=m) for h in hours for m in minutes]
        day += dt.timedelta(days=1)
    runs.sort()
    if len(runs) < 2:
        return None
    return int(max((b - a).total_seconds() for a, b in itertools.pairwise(runs)))


@settings(max_examples=40, deadline=None)
@given(
    minutes=st.sets(st.integers(0, 59), min_size=1, max_size=3),
    hours=st.sets(st.integers(0, 23), min_size=1, max_size=3),
    days=st.none() | st.sets(st.integers(1, 31), min_size=1, max_size=4),
    months=st.sets(st.integers(1, 12), min_size=1, max_size=12),
    weekdays=st.none() | st.sets(st.integers(0, 6), min_size=1, max_size=7),
    styles=st.tuples(*(st.integers(0, 2) for _ in range(5))),
)
def test_longest_gap_matches_listing_every_run(
    minutes: set[int],
    hours: set[int],
    days: set[int] | None,
    months: set[int],
    weekdays: set[int] | None,
    styles: tuple[int, ...],
) -> None:
    fields = [
        _text(list(minutes), None, 0, styles[0]),
        _text(list(hours), None, 0, styles[1]),
        "*" if days is None else _text(list(days), None, 1, styles[2]),
        _text(list(months), MONTHS, 1, styles[3]),
        "?" if weekdays is None else _text(list(weekdays), WEEKDAYS, 0, styles[4]),
    ]
    schedule = " ".join(fields)
    check_cron(schedule)
    assert longest_gap_seconds(schedule) == _oracle(minutes, hours, days, months, weekdays)
