"""Time phrases built on others that the query also names: a range between two ("between
August 11 and August 15 2023", "from March to June") and an offset from one ("the week
before August 3, 2023", "two days after 8 May").

- A range runs from its first phrase's start to its last phrase's end. A first phrase
  that resolved after the last ("August 11" without a year, asked in 2026, before
  "August 15 2023") takes the last one's year: moved back a year at a time until it
  starts before the range ends.
- A month and a relative year ("in February last year", "last year in February",
  "early March of this year") is that month of that year.
- An offset of N units ("the"/"a" is one) before X ends where X starts and starts N units
  earlier; after X it starts where X ends and lasts N units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import NamedTuple, Protocol

from memory_app.timeq import calendar as cal
from memory_app.timeq.vocabulary import NUMBER_RE, UNIT_RE, number_value

_RANGE_START = re.compile(r"\b(?:between|from)\s+", re.IGNORECASE)
_RANGE_JOIN = re.compile(r"\s*(?:\band\b|\bto\b|\buntil\b|\btill\b|\bthrough\b|-|\u2013)\s*", re.I)
_OFFSET = re.compile(
    rf"\b(?:the|an?|(?P<count>{NUMBER_RE}))\s+(?P<unit>{UNIT_RE})s?\s+(?P<word>before|after)\s+",
    re.IGNORECASE,
)
_MAX_YEARS_BACK = 100
_MONTH_THEN_YEAR = re.compile(r"\s+(?:of\s+)?", re.IGNORECASE)
_YEAR_THEN_MONTH = re.compile(r"\s+")
_YEAR_WRITTEN = re.compile(r"\d{4}")


class Dated(Protocol):
    """A dated phrase of the query (phrases.TimeScope)."""

    @property
    def kind(self) -> str: ...
    @property
    def span(self) -> tuple[int, int]: ...
    @property
    def start(self) -> datetime | None: ...
    @property
    def end(self) -> datetime | None: ...


class Compound(NamedTuple):
    kind: str  # "range", "offset" or "named_month"
    span: tuple[int, int]
    start: datetime
    end: datetime


def ranges(query: str, by_start: Mapping[int, Dated]) -> list[Compound]:
    """ "between X and Y" / "from X to Y" where X and Y are dated phrases (`by_start`: the
    longest dated phrase at each position)."""
    out: list[Compound] = []
    for match in _RANGE_START.finditer(query):
        first = by_start.get(match.end())
        join = _RANGE_JOIN.match(query, first.span[1]) if first is not None else None
        last = by_start.get(join.end()) if join is not None else None
        if first is None or last is None or first.start is None or last.end is None:
            continue
        start = _before(first.start, last.end)
        if start is None:
            continue
        out.append(Compound("range", (match.start(), last.span[1]), start, last.end))
    return out


def offsets(query: str, by_start: Mapping[int, Dated]) -> list[Compound]:
    """ "the week before X", "two days after X" where X is a dated phrase."""
    out: list[Compound] = []
    for match in _OFFSET.finditer(query):
        anchor = by_start.get(match.end())
        counted = number_value(match.group("count")) if match.group("count") else (1, False)
        if anchor is None or counted is None:
            continue
        unit, count = match.group("unit").lower(), counted[0]
        try:
            if match.group("word").lower() == "before" and anchor.start is not None:
                start, end = _moved(anchor.start, unit, -count), anchor.start
            elif match.group("word").lower() == "after" and anchor.end is not None:
                start, end = anchor.end, _moved(anchor.end, unit, count)
            else:
                continue
        except (ValueError, OverflowError):  # past year 1 or 9999
            continue
        out.append(Compound("offset", (match.start(), anchor.span[1]), start, end))
    return out


def _moved(moment: datetime, unit: str, count: int) -> datetime:
    """`moment` (a midnight in its zone) moved by `count` units, months by the calendar."""
    if unit in ("day", "week"):
        return moment + timedelta(days=count * (7 if unit == "week" else 1))
    months = count * (12 if unit == "year" else 1)
    return cal.day_start(cal.add_months(moment.date(), months), moment.tzinfo)  # type: ignore[arg-type]


def _before(start: datetime, end: datetime) -> datetime | None:
    """`start`, moved back a year at a time until it is before `end`."""
    for _ in range(_MAX_YEARS_BACK):
        if start < end:
            return start
        day = start.date()
        if day.year <= 1:
            return None
        try:
            day = day.replace(year=day.year - 1)
        except ValueError:  # 29 February
            day = day.replace(year=day.year - 1, day=28)
        start = cal.day_start(day, start.tzinfo)  # type: ignore[arg-type]
    return None


def months_of_years(query: str, by_start: Mapping[int, Dated]) -> list[Compound]:
    """A named month without its year next to "last/this/next year", in either order."""
    out: list[Compound] = []
    for first in list(by_start.values()):
        joint = (_MONTH_THEN_YEAR if first.kind == "named_month" else _YEAR_THEN_MONTH).match(
            query, first.span[1]
        )
        second = by_start.get(joint.end()) if joint is not None else None
        if second is None:
            continue
        kinds = (first.kind, second.kind)
        if kinds == ("named_month", "relative_year"):
            month, year = first, second
        elif kinds == ("relative_year", "named_month"):
            month, year = second, first
        else:
            continue
        if _YEAR_WRITTEN.search(query, *month.span) or None in (month.start, month.end, year.start):
            continue
        moved = _in_year(month, year.start.year)  # type: ignore[union-attr]  # checked above
        if moved is not None:
            out.append(Compound("named_month", (first.span[0], second.span[1]), *moved))
    return out


def _in_year(month: Dated, year: int) -> tuple[datetime, datetime] | None:
    """The month's interval moved to `year` (its end with it: December ends in January)."""
    start, end = month.start, month.end
    assert start is not None and end is not None
    shift = year - start.year
    try:
        return start.replace(year=start.year + shift), end.replace(year=end.year + shift)
    except ValueError:  # past year 1 or 9999
        return None
