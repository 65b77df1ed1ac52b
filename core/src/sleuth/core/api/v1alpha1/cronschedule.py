"""The schedule of an EvalSchedule: five cron fields, checked as the CronJob API checks them
(the pattern and the zero-step rule for the CRD, :func:`check_cron` for the spec model)."""

from __future__ import annotations

import re

# A cron step of zero (``*/0``): the CronJob API refuses it.
ZERO_STEP = r"/0*([^0-9]|$)"
# Five cron fields (minute hour day-of-month month day-of-week); each digits, names, * / , - ?.
CRON_FIELD = r"[-0-9A-Za-z*/,?]+"
CRON_PATTERN = rf"^{CRON_FIELD}( +{CRON_FIELD}){{4}}$"
_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
_CRON_NAMES = ("minute", "hour", "day of month", "month", "day of week")


def check_cron(schedule: str) -> str:
    """``schedule`` when it is five cron fields whose numbers are in range; ValueError otherwise."""
    if not re.fullmatch(CRON_PATTERN, schedule):
        raise ValueError(
            f"schedule {schedule!r}: expected five cron fields "
            "(minute hour day-of-month month day-of-week), e.g. '0 */6 * * *'"
        )
    for text, (low, high), what in zip(schedule.split(), _CRON_RANGES, _CRON_NAMES, strict=True):
        for number in re.findall(r"[0-9]+", text):
            value = int(number)
            step = "/" + number in text
            if not step and not low <= value <= high:
                raise ValueError(f"schedule {schedule!r}: {what} {value} is outside {low}-{high}")
    if re.search(ZERO_STEP, schedule):
        raise ValueError(f"schedule {schedule!r}: a step (/n) must be at least 1")
    return schedule


__all__ = ["CRON_FIELD", "CRON_PATTERN", "ZERO_STEP", "check_cron"]
