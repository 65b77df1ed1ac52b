"""A small cron expander: the longest gap between consecutive fire times of a schedule.

It reads the five-field schedules an EvalSchedule accepts (see
:func:`sleuth.core.api.v1alpha1.cronschedule.check_cron`) the way the Kubernetes CronJob controller
does: ``*`` and ``?``, numbers, ``a-b`` ranges, ``/step`` (``n/step`` runs from ``n`` to the
field's maximum), comma lists, month and weekday names, and 7 for Sunday. When both day of month
and day of week are restricted, a day matching either fires; when either is unrestricted (``*``
or ``?`` without a step above 1), a day must match both.

The gaps are measured over a fixed 28-year span (a whole cycle of weekdays against dates, leap
years included, between 1901 and 2099), so the answer depends only on the schedule.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass

from sleuth.core.errors import ConfigError

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_NAMES: tuple[dict[str, int], ...] = (
    {},
    {},
    {},
    {name: i + 1 for i, name in enumerate(MONTHS)},
    {name: i for i, name in enumerate(WEEKDAYS)},
)
SPAN_START = dt.date(2001, 1, 1)
SPAN_YEARS = 28


class CronError(ConfigError):
    """The schedule cannot be read."""


@dataclass(frozen=True)
class Field:
    """The values a field allows, and whether it was left unrestricted."""

    values: frozenset[int]
    star: bool


def _number(text: str, field: int) -> int:
    names = _NAMES[field]
    if text.upper() in names:
        return names[text.upper()]
    if not text.isdigit():
        raise CronError(f"{text!r} is not a number")
    return int(text)


def _part(text: str, field: int) -> Field:
    low, high = _BOUNDS[field]
    span, _, step_text = text.partition("/")
    step = int(step_text) if step_text else 1
    if step_text and (not step_text.isdigit() or step == 0):
        raise CronError(f"step {step_text!r} of {text!r}")
    star = span in ("*", "?")
    if star:
        start, end = low, high
    elif "-" in span:
        first, _, last = span.partition("-")
        start, end = _number(first, field), _number(last, field)
    else:
        start = _number(span, field)
        end = high if step_text else start
    if not low <= start <= high or not low <= end <= high or start > end:
        raise CronError(f"{text!r} is outside {low}-{high}")
    return Field(frozenset(range(start, end + 1, step)), star and step == 1)


def parse_field(text: str, field: int) -> Field:
    """One field (0 minute, 1 hour, 2 day of month, 3 month, 4 day of week)."""
    parts = [_part(p, field) for p in text.split(",")]
    values = frozenset().union(*(p.values for p in parts))
    if field == 4 and 7 in values:
        values = (values - {7}) | {0}
    return Field(values, any(p.star for p in parts))


@dataclass(frozen=True)
class Schedule:
    minutes: Field
    hours: Field
    days: Field
    months: Field
    weekdays: Field

    def fires_on(self, day: dt.date) -> bool:
        if day.month not in self.months.values:
            return False
        dom = day.day in self.days.values
        dow = (day.isoweekday() % 7) in self.weekdays.values
        if self.days.star or self.weekdays.star:
            return dom and dow
        return dom or dow

    def minutes_of_day(self) -> list[int]:
        return sorted(h * 60 + m for h in self.hours.values for m in self.minutes.values)


def parse(schedule: str) -> Schedule:
    """The five fields of ``schedule``."""
    fields = schedule.split()
    if len(fields) != 5:
        raise CronError(f"{schedule!r}: expected five fields")
    return Schedule(*(parse_field(text, i) for i, text in enumerate(fields)))


def longest_gap_seconds(schedule: str) -> int | None:
    """The longest time between two consecutive runs of ``schedule``; None if it never fires."""
    cron = parse(schedule)
    times = cron.minutes_of_day()
    longest = max((b - a for a, b in itertools.pairwise(times)), default=0)
    end = dt.date(SPAN_START.year + SPAN_YEARS, 1, 1)
    previous_last: int | None = None  # minute (since SPAN_START) of the last run so far
    runs = 0
    day, index = SPAN_START, 0
    while day < end:
        if cron.fires_on(day):
            start = index * 1440
            if previous_last is not None:
                longest = max(longest, start + times[0] - previous_last)
            previous_last = start + times[-1]
            runs += len(times)
        day += dt.timedelta(days=1)
        index += 1
    if runs < 2:
        return None
    return longest * 60


__all__ = ["CronError", "Field", "Schedule", "longest_gap_seconds", "parse", "parse_field"]
