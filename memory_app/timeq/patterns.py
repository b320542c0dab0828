"""The table of time phrases: each row a kind, a regular expression (matched without
regard to case) and the function that turns a match into an interval [start, end) in
`as_of`'s time zone, or None when the words name no real date (30 February).

Conventions, chosen for questions about the past (what an agent's memory is asked):
- a bare weekday or "last Saturday" is the latest such day strictly before today; "this
  Saturday" is the one of the current ISO week (Monday to Sunday); "next Saturday" the
  first one after today;
- a month without a year ("in May", "May 8th") is the latest one that has begun by
  `as_of` (asked in March 2024, "in May" is May 2023); "last May" is the latest May
  before the current month; "this May" the current year's; "next May" the first after;
- "last week" / "last month" / "last year" are the previous calendar week (Monday to
  Sunday), month, year; "the past week" / "the last two weeks" are the days up to and
  including today;
- "N units ago" is a window around the day N units back (`AGO_TOLERANCE_DAYS`), wider
  for a vague count ("a few", "a couple of");
- "May" alone is the verb: it is a month only with a preposition or modifier ("in",
  "last", "early"...), a day or a year.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo

from memory_app.timeq import calendar as cal
from memory_app.timeq.vocabulary import (
    DAY_OF_MONTH_RE,
    MONTH_OR_ABBREVIATION_RE,
    MONTH_RE,
    NUMBER_RE,
    UNIT_RE,
    WEEKDAY_OR_ABBREVIATION_RE,
    WEEKDAY_RE,
    WEEKDAYS,
    YEAR_RE,
    month_value,
    number_value,
)

# Half-width of an "ago" window, in days, by unit: "3 days ago" is the day three days
# back +- 1 day; "two weeks ago" +- 3 days; "a month ago" +- 15; "a year ago" +- 183.
# Doubled for a vague count.
AGO_TOLERANCE_DAYS = {"day": 1, "week": 3, "month": 15, "year": 183}


@dataclass(frozen=True)
class Now:
    """The moment a question is asked: aware, its zone, its local date."""

    as_of: datetime
    zone: tzinfo
    today: date


Resolver = Callable[[re.Match[str], Now], cal.Interval | None]


@dataclass(frozen=True)
class Pattern:
    kind: str
    regex: re.Pattern[str]
    resolve: Resolver


def _compile(text: str) -> re.Pattern[str]:
    return re.compile(r"\b" + text + r"\b", re.IGNORECASE | re.VERBOSE)


def _modifier(match: re.Match[str]) -> str:
    """The "last/this/next" word of a match, spaces normalised ("this past" -> "last")."""
    word = " ".join((match.group("mod") or "").lower().split())
    return {"this past": "last", "previous": "last", "coming": "next"}.get(word, word)


def _day_of_month(text: str) -> int:
    return int(re.sub(r"\D", "", text))


# --- relative days -----------------------------------------------------------------

_RELATIVE_DAY_OFFSETS = {
    "today": 0,
    "tonight": 0,
    "this morning": 0,
    "this afternoon": 0,
    "this evening": 0,
    "yesterday": -1,
    "the day before yesterday": -2,
    "tomorrow": 1,
    "the day after tomorrow": 2,
}


def _relative_day(match: re.Match[str], now: Now) -> cal.Interval:
    words = " ".join(match.group(0).lower().split())
    if words == "last night":  # the evening before and the small hours of today
        evening = cal.day_start(now.today - timedelta(days=1), now.zone) + timedelta(hours=18)
        return evening, cal.day_start(now.today, now.zone) + timedelta(hours=6)
    return cal.one_day(now.today + timedelta(days=_RELATIVE_DAY_OFFSETS[words]), now.zone)


def _earlier(match: re.Match[str], now: Now) -> cal.Interval:
    """ "earlier today / this week / this month / this year": from the unit's start to
    `as_of` itself."""
    unit = match.group("unit").lower()
    first = {
        "today": now.today,
        "week": cal.week_monday(now.today),
        "month": cal.month_first(now.today),
        "year": date(now.today.year, 1, 1),
    }[unit]
    return cal.day_start(first, now.zone), now.as_of


# --- "N units ago" and "the past N units" ------------------------------------------


def _shift(today: date, unit: str, count: int) -> date:
    """`today` moved back `count` units (months and years by the calendar)."""
    if unit == "day":
        return today - timedelta(days=count)
    if unit == "week":
        return today - timedelta(weeks=count)
    return cal.add_months(today, -count * (12 if unit == "year" else 1))


def _ago(match: re.Match[str], now: Now) -> cal.Interval | None:
    counted = number_value(match.group("count"))
    if counted is None:
        return None
    count, vague = counted
    unit = match.group("unit").lower()
    target = _shift(now.today, unit, count)
    tolerance = AGO_TOLERANCE_DAYS[unit] * (2 if vague else 1)
    return cal.days(
        target - timedelta(days=tolerance), target + timedelta(days=tolerance + 1), now.zone
    )


def _past_span(match: re.Match[str], now: Now) -> cal.Interval | None:
    """ "the past two weeks", "in the last few days", "past month": the days from `count`
    units back up to and including today."""
    count = 1
    if match.group("count"):
        counted = number_value(match.group("count"))
        if counted is None:
            return None
        count = counted[0]
    start = _shift(now.today, match.group("unit").lower(), count)
    return cal.days(start, now.today + timedelta(days=1), now.zone)


# --- calendar weeks, months, years -------------------------------------------------

_STEP = {"last": -1, "this": 0, "next": 1}


def _relative_week(match: re.Match[str], now: Now) -> cal.Interval:
    monday = cal.week_monday(now.today) + timedelta(weeks=_STEP[_modifier(match)])
    return cal.days(monday, monday + timedelta(days=7), now.zone)


def _weekend(match: re.Match[str], now: Now) -> cal.Interval:
    """Saturday and Sunday. "last weekend" / "over the weekend": the latest weekend that
    has ended before today (asked on a Sunday: the one before); "this weekend": the
    current ISO week's; "next weekend": the following week's."""
    modifier = _modifier(match) or "last"
    this_saturday = cal.week_monday(now.today) + timedelta(days=5)
    if modifier == "last":
        saturday = cal.previous_weekday(now.today, 5)
        if saturday + timedelta(days=1) >= now.today:  # still that weekend
            saturday -= timedelta(weeks=1)
    else:
        saturday = this_saturday + timedelta(weeks=_STEP[modifier])
    return cal.days(saturday, saturday + timedelta(days=2), now.zone)


def _relative_month(match: re.Match[str], now: Now) -> cal.Interval:
    first = cal.add_months(cal.month_first(now.today), _STEP[_modifier(match)])
    return cal.month_days(first.year, first.month, now.zone)


def _relative_year(match: re.Match[str], now: Now) -> cal.Interval:
    return cal.year_days(now.today.year + _STEP[_modifier(match)], now.zone)


def _year(match: re.Match[str], now: Now) -> cal.Interval:
    return cal.year_days(int(match.group("year")), now.zone)


# --- named months and weekdays -----------------------------------------------------


_MONTH_THIRDS = {
    "early": "early",
    "the beginning of": "early",
    "the start of": "early",
    "mid": "mid",
    "the middle of": "mid",
    "late": "late",
    "the end of": "late",
}


def _named_month(match: re.Match[str], now: Now) -> cal.Interval | None:
    word = match.group("month")
    modifier = _modifier(match)
    part = (match.group("part") or "").lower()
    has_context = bool(match.group("prep") or modifier or part or match.group("year"))
    if word.lower() == "may" and not has_context:
        return None  # the verb
    month = month_value(word)
    if month is None:
        return None
    if match.group("year"):
        year = int(match.group("year"))
    elif modifier == "last":
        year = now.today.year if month < now.today.month else now.today.year - 1
    elif modifier == "this":
        year = now.today.year
    elif modifier == "next":
        year = now.today.year if month > now.today.month else now.today.year + 1
    else:
        year = cal.latest_month_year(month, now.today)
    if part:
        return cal.month_part(year, month, _MONTH_THIRDS[" ".join(part.split())], now.zone)
    return cal.month_days(year, month, now.zone)


def _named_weekday(match: re.Match[str], now: Now) -> cal.Interval:
    weekday = WEEKDAYS[(match.group("weekday") or match.group("bare")).lower()]
    modifier = _modifier(match)
    if modifier == "this":
        day = cal.week_monday(now.today) + timedelta(days=weekday)
    elif modifier == "next":
        day = cal.next_weekday(now.today, weekday)
    else:  # "last Saturday", "on Saturday", "Saturday"
        day = cal.previous_weekday(now.today, weekday)
    return cal.one_day(day, now.zone)


# --- dates ---------------------------------------------------------------------------


def _date(year: int | None, month: int, day: int, now: Now) -> cal.Interval | None:
    if year is None:
        found = cal.latest_date(month, day, now.today)
        return None if found is None else cal.one_day(found, now.zone)
    if not 1 <= month <= 12 or not 1 <= day <= cal.month_length(year, month):
        return None
    return cal.one_day(date(year, month, day), now.zone)


def _numeric_date(match: re.Match[str], now: Now) -> cal.Interval | None:
    return _date(int(match.group("year")), int(match.group("m")), int(match.group("d")), now)


def _written_date(match: re.Match[str], now: Now) -> cal.Interval | None:
    month = month_value(match.group("month"))
    if month is None:
        return None
    year = int(match.group("year")) if match.group("year") else None
    return _date(year, month, _day_of_month(match.group("day")), now)


def _day_of_month_only(match: re.Match[str], now: Now) -> cal.Interval | None:
    """ "on the 8th": the latest 8th not after today."""
    day = _day_of_month(match.group("day"))
    first = cal.month_first(now.today)
    for back in range(0, 3):
        month = cal.add_months(first, -back)
        if day <= cal.month_length(month.year, month.month):
            found = month.replace(day=day)
            if found <= now.today:
                return cal.one_day(found, now.zone)
    return None


# A weekday alone is a date only at the end of a clause or before a part of the day
# ("we met Saturday.", "Saturday morning"): before a noun it names a habit or a thing
# ("Sunday mass", "the Friday market").
_PART_OF_DAY = r"(?:morning|afternoon|evening|night)\b"
# "on Saturday mornings" is a habit, as "on Saturdays" is.
_PARTS_OF_DAY = r"(?:mornings|afternoons|evenings|nights)\b"
_MOD = r"(?:(?P<mod>this\s+past|last|this|next|previous|coming)\s+)"
_WEEKDAY_PREFIX = rf"(?:on\s+)?(?:{WEEKDAY_OR_ABBREVIATION_RE},?\s+)?"

PATTERNS: tuple[Pattern, ...] = (
    Pattern(
        "relative_day",
        _compile(
            r"(?:the\s+day\s+(?:before\s+yesterday|after\s+tomorrow)|today|tonight|yesterday"
            r"|tomorrow|last\s+night|this\s+(?:morning|afternoon|evening))"
        ),
        _relative_day,
    ),
    Pattern(
        "earlier", _compile(r"earlier\s+(?:this\s+)?(?P<unit>today|week|month|year)"), _earlier
    ),
    Pattern("ago", _compile(rf"(?P<count>{NUMBER_RE})\s+(?P<unit>{UNIT_RE})s?\s+ago"), _ago),
    Pattern(
        "past_span",
        _compile(
            rf"(?:(?:in|during|over|within|for)\s+)?(?:the\s+(?:last|past|previous)|past)"
            rf"\s+(?:(?P<count>{NUMBER_RE})\s+)?(?P<unit>{UNIT_RE})s?(?!\s+of\b)"
        ),
        _past_span,
    ),
    Pattern("relative_week", _compile(rf"{_MOD}week"), _relative_week),
    Pattern(
        "weekend",
        _compile(rf"(?:(?:over|during|at|on)\s+the\s+weekend|{_MOD}weekend)"),
        _weekend,
    ),
    Pattern("relative_month", _compile(rf"{_MOD}month"), _relative_month),
    Pattern("relative_year", _compile(rf"{_MOD}year"), _relative_year),
    Pattern(
        "year",
        _compile(
            rf"(?:(?:in|during|throughout)\s+(?:the\s+year\s+)?|the\s+year\s+)(?P<year>{YEAR_RE})"
        ),
        _year,
    ),
    Pattern(
        "named_month",
        _compile(
            rf"(?:(?P<prep>in|during|throughout|of)\s+)?{_MOD}?"
            r"(?:(?P<part>early|mid|late|the\s+(?:beginning|start|middle|end)\s+of)(?:\s+|-))?"
            rf"(?P<month>{MONTH_RE})(?:,?\s+(?:of\s+)?(?P<year>{YEAR_RE}))?"
        ),
        _named_month,
    ),
    Pattern(
        "named_weekday",
        _compile(
            rf"(?:(?=(?:on|this|last|next|previous|coming)\s)(?:on\s+)?{_MOD}?"
            rf"(?P<weekday>{WEEKDAY_RE})(?!\s+{_PARTS_OF_DAY})"
            rf"|(?P<bare>{WEEKDAY_RE})(?=\s*(?:[,.;:?!)]|$|{_PART_OF_DAY})))"
        ),
        _named_weekday,
    ),
    Pattern(
        "absolute_date",
        _compile(r"(?P<year>(?:19|20)\d\d)[-/](?P<m>[01]?\d)[-/](?P<d>[0-3]?\d)(?!\d)"),
        _numeric_date,
    ),
    Pattern(
        "absolute_date",  # "8 May 2023", "the 8th of May", "Sat, 8 May"
        _compile(
            rf"{_WEEKDAY_PREFIX}(?:the\s+)?(?P<day>{DAY_OF_MONTH_RE})\s+(?:of\s+)?"
            rf"(?P<month>{MONTH_OR_ABBREVIATION_RE})(?:,?\s+(?P<year>{YEAR_RE}))?"
        ),
        _written_date,
    ),
    Pattern(
        "absolute_date",  # "May 8th", "May 8, 2023", "Saturday, May 6"
        _compile(
            rf"{_WEEKDAY_PREFIX}(?P<month>{MONTH_OR_ABBREVIATION_RE})\s+(?:the\s+)?"
            rf"(?P<day>{DAY_OF_MONTH_RE})(?:,?\s+(?P<year>{YEAR_RE}))?"
        ),
        _written_date,
    ),
    Pattern(
        "absolute_date",
        _compile(rf"on\s+the\s+(?P<day>{DAY_OF_MONTH_RE})(?<=st|nd|rd|th)"),
        _day_of_month_only,
    ),
)
