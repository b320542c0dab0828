"""Time phrases built on two others ("between X and Y", "from X to Y") or on one with an
offset ("the week before X", "two days after X"). Pure Python: no database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from memory_app.timeq import resolve_time_phrases

# Sunday 29 November 2026: a month or a date without a year is this year's or last.
LATE_2026 = datetime(2026, 11, 29, 12, tzinfo=UTC)
# Tuesday 30 May 2023: "June" without a year is June 2022.
MAY_2023 = datetime(2023, 5, 30, 23, 40, tzinfo=UTC)


def _resolved(query: str, as_of: datetime) -> tuple[str, date | None, date | None, str]:
    scope = resolve_time_phrases(query, as_of)
    assert scope is not None, query
    assert query[scope.span[0] : scope.span[1]] == scope.phrase
    return (
        scope.kind,
        scope.start.date() if scope.start else None,
        scope.end.date() if scope.end else None,
        scope.phrase,
    )


@pytest.mark.parametrize(
    ("query", "as_of", "first", "end", "phrase"),
    [
        # The year written once, at the end, is both dates'.
        (
            "Where was John between August 11 and August 15 2023?",
            LATE_2026,
            date(2023, 8, 11),
            date(2023, 8, 16),
            "between August 11 and August 15 2023",
        ),
        # Across a new year: the first date is the year before the last.
        (
            "between December 28 and January 3 2023",
            LATE_2026,
            date(2022, 12, 28),
            date(2023, 1, 4),
            "between December 28 and January 3 2023",
        ),
        # Months without a year: each the latest begun by as_of, the first moved back
        # a year so the range runs forward.
        (
            "what did I read from March to June?",
            MAY_2023,
            date(2022, 3, 1),
            date(2022, 7, 1),
            "from March to June",
        ),
        (
            "from 8 May 2023 until 12 May 2023",
            LATE_2026,
            date(2023, 5, 8),
            date(2023, 5, 13),
            "from 8 May 2023 until 12 May 2023",
        ),
    ],
)
def test_a_range_runs_from_its_first_phrase_to_its_last(
    query: str, as_of: datetime, first: date, end: date, phrase: str
) -> None:
    assert _resolved(query, as_of) == ("range", first, end, phrase)


@pytest.mark.parametrize(
    ("query", "first", "end", "phrase"),
    [
        (
            "What did John do the week before August 3, 2023 involving his kids?",
            date(2023, 7, 27),
            date(2023, 8, 3),
            "the week before August 3, 2023",
        ),
        (
            "the puppy she got two weeks before August 11, 2023",
            date(2023, 7, 28),
            date(2023, 8, 11),
            "two weeks before August 11, 2023",
        ),
        (
            "What happened two days after 8 May 2023?",
            date(2023, 5, 9),
            date(2023, 5, 11),
            "two days after 8 May 2023",
        ),
        (
            "a month after 31 January 2024",
            date(2024, 2, 1),
            date(2024, 3, 1),
            "a month after 31 January 2024",
        ),
        (
            "the year before 8 May 2023",
            date(2022, 5, 8),
            date(2023, 5, 8),
            "the year before 8 May 2023",
        ),
    ],
)
def test_an_offset_is_counted_from_its_phrase(
    query: str, first: date, end: date, phrase: str
) -> None:
    assert _resolved(query, LATE_2026) == ("offset", first, end, phrase)


def test_an_offset_keeps_as_of_s_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    scope = resolve_time_phrases(
        "the week before 3 August 2023", datetime(2023, 9, 1, 8, tzinfo=tokyo)
    )
    assert scope is not None
    assert (scope.start, scope.end) == (
        datetime(2023, 7, 27, tzinfo=tokyo),
        datetime(2023, 8, 3, tzinfo=tokyo),
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # A table row of its own wins a tie with the offset it also reads as.
        (
            "What did I do the day before yesterday?",
            ("relative_day", date(2026, 11, 27), date(2026, 11, 28), "the day before yesterday"),
        ),
        # "between" / "from" before words that are no date: the date alone.
        (
            "between meetings in May 2023",
            ("named_month", date(2023, 5, 1), date(2023, 6, 1), "in May 2023"),
        ),
        (
            "I came from Sweden in May 2023",
            ("named_month", date(2023, 5, 1), date(2023, 6, 1), "in May 2023"),
        ),
        # "before X" without a count stays open at its start.
        ("before August 3, 2023", ("before", None, date(2023, 8, 3), "before August 3, 2023")),
    ],
)
def test_no_compound_without_its_dated_parts(
    query: str, expected: tuple[str, date | None, date | None, str]
) -> None:
    assert _resolved(query, LATE_2026) == expected


@pytest.mark.parametrize(
    ("query", "first", "end", "phrase"),
    [
        (
            "what did I drink in February last year?",
            date(2025, 2, 1),
            date(2025, 3, 1),
            "in February last year",
        ),
        (
            "what did I drink last year in February?",
            date(2025, 2, 1),
            date(2025, 3, 1),
            "last year in February",
        ),
        (
            "in early March of last year",
            date(2025, 3, 1),
            date(2025, 3, 11),
            "in early March of last year",
        ),
        # December's end moves with it into the next year.
        ("in December this year", date(2026, 12, 1), date(2027, 1, 1), "in December this year"),
    ],
)
def test_a_month_of_a_relative_year_is_that_year_s(
    query: str, first: date, end: date, phrase: str
) -> None:
    assert _resolved(query, LATE_2026) == ("named_month", first, end, phrase)


def test_a_month_with_its_year_written_keeps_it() -> None:
    assert _resolved("in February 2024 last year", LATE_2026) == (
        "named_month",
        date(2024, 2, 1),
        date(2024, 3, 1),
        "in February 2024",
    )
