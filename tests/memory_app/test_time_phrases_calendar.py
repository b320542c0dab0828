"""Calendar time phrases resolved against a fixed `as_of`: named months, named weekdays
and absolute dates, with month lengths and weekday arithmetic. Pure Python: no
database."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from memory_app.timeq import find_time_phrases
from memory_app.timeq.calendar import add_months, latest_date, previous_weekday
from tests.memory_app.time_phrase_helpers import (
    NEW_YEAR,
    TUESDAY,
    expect_scope,
    local_days,
    resolved_scope,
)


class TestNamedMonths:
    @pytest.mark.parametrize(
        ("query", "as_of", "first", "phrase"),
        [
            # the latest one that has begun by as_of
            ("what did I do in May", TUESDAY, date(2023, 5, 1), "in May"),
            ("in June", TUESDAY, date(2022, 6, 1), "in June"),
            ("in December", NEW_YEAR, date(2023, 12, 1), "in December"),
            ("in January", NEW_YEAR, date(2024, 1, 1), "in January"),
            ("my March trip", TUESDAY, date(2023, 3, 1), "March"),
            # an explicit year
            ("in May 2021", TUESDAY, date(2021, 5, 1), "in May 2021"),
            ("during July of 2020", TUESDAY, date(2020, 7, 1), "during July of 2020"),
            # last / this / next
            ("last May", TUESDAY, date(2022, 5, 1), "last May"),
            ("last April", TUESDAY, date(2023, 4, 1), "last April"),
            ("this August", TUESDAY, date(2023, 8, 1), "this August"),
            ("next February", TUESDAY, date(2024, 2, 1), "next February"),
            ("next June", TUESDAY, date(2023, 6, 1), "next June"),
        ],
    )
    def test_whole_month(self, query: str, as_of: datetime, first: date, phrase: str) -> None:
        expect_scope(query, as_of, "named_month", first, add_months(first, 1), phrase)

    def test_february_lengths(self) -> None:
        assert local_days(resolved_scope("in February 2024", TUESDAY)) == (
            date(2024, 2, 1),
            date(2024, 3, 1),
        )
        assert local_days(resolved_scope("in February", TUESDAY)) == (
            date(2023, 2, 1),
            date(2023, 3, 1),
        )

    @pytest.mark.parametrize(
        ("query", "first", "end"),
        [
            ("early May", date(2023, 5, 1), date(2023, 5, 11)),
            ("mid-April", date(2023, 4, 11), date(2023, 4, 21)),
            ("late February", date(2023, 2, 21), date(2023, 3, 1)),
            ("the end of January", date(2023, 1, 21), date(2023, 2, 1)),
        ],
    )
    def test_thirds_of_a_month(self, query: str, first: date, end: date) -> None:
        expect_scope(query, TUESDAY, "named_month", first, end, query)

    def test_may_the_verb_is_no_month(self) -> None:
        assert find_time_phrases("May I ask what my sister likes?", TUESDAY) == []
        assert find_time_phrases("I may have told you", TUESDAY) == []


class TestNamedWeekdays:
    @pytest.mark.parametrize(
        ("query", "day"),
        [
            # TUESDAY is Tuesday 30 May 2023
            ("last Saturday", date(2023, 5, 27)),
            ("on Saturday", date(2023, 5, 27)),
            ("Monday", date(2023, 5, 29)),
            # the same weekday as today: a week back
            ("last Tuesday", date(2023, 5, 23)),
            ("on Wednesday", date(2023, 5, 24)),
            ("this past Sunday", date(2023, 5, 28)),
            # this: the current ISO week's; next: the first after today
            ("this Friday", date(2023, 6, 2)),
            ("this Monday", date(2023, 5, 29)),
            ("next Tuesday", date(2023, 6, 6)),
            ("next Wednesday", date(2023, 5, 31)),
        ],
    )
    def test_weekday(self, query: str, day: date) -> None:
        expect_scope(
            f"what did I cook {query}?",
            TUESDAY,
            "named_weekday",
            day,
            day + timedelta(days=1),
            query,
        )

    def test_last_friday_crosses_the_year(self) -> None:
        expect_scope(
            "last Friday",
            NEW_YEAR,
            "named_weekday",
            date(2023, 12, 29),
            date(2023, 12, 30),
            "last Friday",
        )

    def test_previous_weekday_over_a_fortnight(self) -> None:
        start = date(2023, 5, 1)
        for offset in range(14):
            today = start + timedelta(days=offset)
            for weekday in range(7):
                found = previous_weekday(today, weekday)
                assert found.weekday() == weekday
                assert 1 <= (today - found).days <= 7

    def test_plural_weekday_is_a_habit_not_a_date(self) -> None:
        assert find_time_phrases("I swim on Saturdays", TUESDAY) == []
        assert find_time_phrases("when do I wake up on Saturday mornings", TUESDAY) == []

    @pytest.mark.parametrize("query", ["the Sunday mass at St. Mary's", "the Friday market stall"])
    def test_a_bare_weekday_before_a_noun_is_no_date(self, query: str) -> None:
        assert find_time_phrases(query, TUESDAY) == []

    @pytest.mark.parametrize(
        ("query", "phrase"),
        [("we met Saturday, then left", "Saturday"), ("Saturday morning I ran", "Saturday")],
    )
    def test_a_bare_weekday_at_a_clause_end_or_part_of_day(self, query: str, phrase: str) -> None:
        day = date(2023, 5, 27)
        expect_scope(query, TUESDAY, "named_weekday", day, day + timedelta(days=1), phrase)


class TestAbsoluteDates:
    @pytest.mark.parametrize(
        ("query", "day"),
        [
            ("2023-05-08", date(2023, 5, 8)),
            ("2021/12/31", date(2021, 12, 31)),
            ("8 May 2023", date(2023, 5, 8)),
            ("the 8th of May", date(2023, 5, 8)),
            ("May 8th", date(2023, 5, 8)),
            ("May 8, 2021", date(2021, 5, 8)),
            ("Sept. 3rd", date(2022, 9, 3)),
            ("3 Aug 2020", date(2020, 8, 3)),
            ("on Saturday, May 6", date(2023, 5, 6)),
            # without a year: the latest one not after as_of
            ("June 2nd", date(2022, 6, 2)),
            ("May 30th", date(2023, 5, 30)),
            ("May 31st", date(2022, 5, 31)),
            ("on the 8th", date(2023, 5, 8)),
            ("on the 31st", date(2023, 3, 31)),  # 31 May is tomorrow, April has 30 days
        ],
    )
    def test_one_day(self, query: str, day: date) -> None:
        expect_scope(
            f"what happened {query}?", TUESDAY, "absolute_date", day, day + timedelta(days=1), query
        )

    def test_impossible_dates_are_no_phrase(self) -> None:
        assert find_time_phrases("on 2023-02-30", TUESDAY) == []
        # no such day: what is left is the month
        scope = resolved_scope("February 30th", TUESDAY)
        assert (scope.kind, scope.phrase) == ("named_month", "February")

    def test_leap_day_without_a_year_is_the_latest_leap_years(self) -> None:
        assert latest_date(2, 29, date(2023, 5, 30)) == date(2020, 2, 29)
        assert local_days(resolved_scope("February 29th", TUESDAY)) == (
            date(2020, 2, 29),
            date(2020, 3, 1),
        )
