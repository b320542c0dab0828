"""The words time phrases are made of, as tables, and the regular-expression fragments
that match them. Every alternation is ordered longest first, so that "sept" wins over
"sep" and "a couple of" over "a"."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sessions_app.resolution.vocabulary import CARDINAL_WORDS

# Counts written as words (the cardinals the reference resolver reads too); "a"/"an" as
# in "a week ago".
NUMBER_WORDS: dict[str, int] = {"a": 1, "an": 1, **CARDINAL_WORDS, "thirty": 30}

# Vague counts: the number they usually stand for. A vague count widens the tolerance of
# an "ago" phrase (phrases.AGO_TOLERANCE_DAYS, doubled).
VAGUE_NUMBER_WORDS: dict[str, int] = {
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 3,
}

MONTHS: dict[str, int] = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
}

# Abbreviations are read only inside a date ("Sept 8", "8 Aug 2023"): alone, "mar",
# "jan" or "sat" are as often words or names.
MONTH_ABBREVIATIONS: dict[str, int] = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}

# Monday = 0, as datetime.date.weekday() counts.
WEEKDAYS: dict[str, int] = {
    "monday": 0,
    "tuesday": 1,
    "wednesday": 2,
    "thursday": 3,
    "friday": 4,
    "saturday": 5,
    "sunday": 6,
}

WEEKDAY_ABBREVIATIONS: dict[str, int] = {
    "mon": 0,
    "tue": 1,
    "tues": 1,
    "wed": 2,
    "thu": 3,
    "thur": 3,
    "thurs": 3,
    "fri": 4,
    "sat": 5,
    "sun": 6,
}

UNITS: dict[str, str] = {"day": "day", "week": "week", "month": "month", "year": "year"}


def alternation(words: Iterable[str]) -> str:
    """A non-capturing regex alternation of `words`, longest first, spaces as `\\s+`."""
    ordered = sorted(words, key=lambda word: (-len(word), word))
    return "(?:" + "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in ordered) + ")"


def number_value(text: str) -> tuple[int, bool] | None:
    """The count `text` stands for and whether it is vague ("a few"); None if it is none."""
    words = " ".join(text.lower().split())
    if words.isdigit():
        return int(words), False
    if words in VAGUE_NUMBER_WORDS:
        return VAGUE_NUMBER_WORDS[words], True
    if words in NUMBER_WORDS:
        return NUMBER_WORDS[words], False
    return None


def month_value(text: str) -> int | None:
    word = text.lower().rstrip(".")
    return MONTHS.get(word) or MONTH_ABBREVIATIONS.get(word)


NUMBER_RE = "(?:" + alternation({**VAGUE_NUMBER_WORDS, **NUMBER_WORDS}) + r"|\d{1,3})"
MONTH_RE = alternation(MONTHS)
MONTH_OR_ABBREVIATION_RE = "(?:" + MONTH_RE + "|" + alternation(MONTH_ABBREVIATIONS) + r"\.?)"
WEEKDAY_RE = alternation(WEEKDAYS)
WEEKDAY_OR_ABBREVIATION_RE = "(?:" + WEEKDAY_RE + "|" + alternation(WEEKDAY_ABBREVIATIONS) + r"\.?)"
UNIT_RE = alternation(UNITS)
# "1st", "2nd", "23rd", "8th" or a bare day number; never followed by another digit.
DAY_OF_MONTH_RE = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?(?!\d)"
YEAR_RE = r"(?:19|20)\d\d(?!\d)"
