"""Calendar arithmetic for time phrases, on local dates of `as_of`'s time zone.

Intervals are built from local dates and turned into aware datetimes at local midnight
(`day_start`), so a day is the calendar day of that zone: 23 or 25 hours long across a
daylight-saving change, never a fixed 24 hours of UTC. Weeks start on Monday (ISO 8601).
"""

from __future__ import annotations

import calendar as _stdlib_calendar
from datetime import date, datetime, time, timedelta, tzinfo

Interval = tuple[datetime | None, datetime | None]


def day_start(day: date, zone: tzinfo) -> datetime:
    """Local midnight of `day` in `zone`, aware."""
    return datetime.combine(day, time.min, tzinfo=zone)


def days(first: date, last_exclusive: date, zone: tzinfo) -> Interval:
    """[midnight of `first`, midnight of `last_exclusive`) in `zone`."""
    return day_start(first, zone), day_start(last_exclusive, zone)


def one_day(day: date, zone: tzinfo) -> Interval:
    return days(day, day + timedelta(days=1), zone)


def month_length(year: int, month: int) -> int:
    return _stdlib_calendar.monthrange(year, month)[1]


def add_months(day: date, months: int) -> date:
    """`day` moved by `months` calendar months, the day clamped to the month's length
    (31 March - 1 month = 28 or 29 February)."""
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, month_length(year, month)))


def month_first(day: date) -> date:
    return day.replace(day=1)


def month_days(year: int, month: int, zone: tzinfo) -> Interval:
    """The whole calendar month."""
    first = date(year, month, 1)
    return days(first, add_months(first, 1), zone)


def month_part(year: int, month: int, part: str, zone: tzinfo) -> Interval:
    """A third of a month: "early" days 1-10, "mid" 11-20, "late" the 21st to its end."""
    first = date(year, month, 1)
    bounds = {"early": (1, 11), "mid": (11, 21), "late": (21, None)}
    start_day, end_day = bounds[part]
    end = add_months(first, 1) if end_day is None else first.replace(day=end_day)
    return days(first.replace(day=start_day), end, zone)


def year_days(year: int, zone: tzinfo) -> Interval:
    return days(date(year, 1, 1), date(year + 1, 1, 1), zone)


def week_monday(day: date) -> date:
    """The Monday of `day`'s ISO week."""
    return day - timedelta(days=day.weekday())


def previous_weekday(day: date, weekday: int) -> date:
    """The last date strictly before `day` that falls on `weekday` (Monday = 0)."""
    back = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=back)


def next_weekday(day: date, weekday: int) -> date:
    """The first date strictly after `day` that falls on `weekday`."""
    ahead = (weekday - day.weekday()) % 7 or 7
    return day + timedelta(days=ahead)


def latest_date(month: int, day: int, today: date) -> date | None:
    """The latest date on `month`/`day` not after `today` (a 29 February: the latest leap
    year's); None when no year has that date (30 February)."""
    if day > month_length(2000, month):  # 2000 is a leap year: the longest of each month
        return None
    for year in range(today.year, today.year - 9, -1):
        if day <= month_length(year, month):
            candidate = date(year, month, day)
            if candidate <= today:
                return candidate
    return None


def latest_month_year(month: int, today: date) -> int:
    """The year of the latest `month` that has begun by `today` (in May asked in March:
    last year's May)."""
    return today.year if month <= today.month else today.year - 1


def local_date(moment: datetime) -> date:
    """`moment`'s calendar date in its own time zone."""
    return moment.date()
