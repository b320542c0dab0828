"""Time phrases resolved against a fixed `as_of`: one class per kind of phrase, with
month lengths, year boundaries, weekday arithmetic and a daylight-saving zone (named
months, weekdays and absolute dates are in test_time_phrases_calendar). Pure Python: no
database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from memory_app.timeq import find_time_phrases, resolve_time_phrases
from tests.memory_app.time_phrase_helpers import (
    MARCH_31,
    NEW_YEAR,
    TUESDAY,
    expect_scope,
    local_days,
    resolved_scope,
)


class TestRelativeDays:
    @pytest.mark.parametrize(
        ("query", "first", "phrase"),
        [
            ("what did I eat today", date(2023, 5, 30), "today"),
            ("what did I eat yesterday?", date(2023, 5, 29), "yesterday"),
            ("the day before yesterday I ran", date(2023, 5, 28), "the day before yesterday"),
            ("what is planned for tomorrow", date(2023, 5, 31), "tomorrow"),
            ("This morning I called mum", date(2023, 5, 30), "This morning"),
        ],
    )
    def test_one_day(self, query: str, first: date, phrase: str) -> None:
        expect_scope(query, TUESDAY, "relative_day", first, first + timedelta(days=1), phrase)

    def test_yesterday_crosses_the_year(self) -> None:
        expect_scope(
            "yesterday", NEW_YEAR, "relative_day", date(2023, 12, 31), date(2024, 1, 1), "yesterday"
        )

    def test_last_night_spans_the_evening_and_small_hours(self) -> None:
        scope = resolved_scope("I slept badly last night", TUESDAY)
        assert scope.start == datetime(2023, 5, 29, 18, tzinfo=UTC)
        assert scope.end == datetime(2023, 5, 30, 6, tzinfo=UTC)

    def test_earlier_today_ends_at_as_of(self) -> None:
        scope = resolved_scope("what did I say earlier today", TUESDAY)
        assert (scope.kind, scope.start, scope.end) == (
            "earlier",
            datetime(2023, 5, 30, tzinfo=UTC),
            TUESDAY,
        )


class TestAgo:
    @pytest.mark.parametrize(
        ("query", "first", "end"),
        [
            # the day 3 days back (27 May) +- 1 day
            ("3 days ago", date(2023, 5, 26), date(2023, 5, 29)),
            ("three days ago", date(2023, 5, 26), date(2023, 5, 29)),
            ("a day ago", date(2023, 5, 28), date(2023, 5, 31)),
            # 14 days back is 16 May, +- 3 days
            ("two weeks ago", date(2023, 5, 13), date(2023, 5, 20)),
            ("2 weeks ago", date(2023, 5, 13), date(2023, 5, 20)),
            ("a week ago", date(2023, 5, 20), date(2023, 5, 27)),
            # vague counts: a couple = 2, a few = 3, tolerance doubled
            ("a couple of weeks ago", date(2023, 5, 10), date(2023, 5, 23)),
            ("a few days ago", date(2023, 5, 25), date(2023, 5, 30)),
            # 30 April +- 15 days
            ("a month ago", date(2023, 4, 15), date(2023, 5, 16)),
            # 30 May 2022 +- 183 days
            ("one year ago", date(2021, 11, 28), date(2022, 11, 30)),
        ],
    )
    def test_window_around_the_day_back(self, query: str, first: date, end: date) -> None:
        expect_scope(f"What happened {query}?", TUESDAY, "ago", first, end, query)

    def test_months_back_clamp_to_the_month_length(self) -> None:
        # 31 March - 1 month = 28 February 2022 (not a leap year), +- 15 days
        expect_scope(
            "a month ago", MARCH_31, "ago", date(2022, 2, 13), date(2022, 3, 16), "a month ago"
        )

    def test_ten_days_ago_crosses_the_year(self) -> None:
        expect_scope(
            "ten days ago", NEW_YEAR, "ago", date(2023, 12, 21), date(2023, 12, 24), "ten days ago"
        )


class TestPastSpan:
    @pytest.mark.parametrize(
        ("query", "first", "phrase"),
        [
            ("in the past week", date(2023, 5, 23), "in the past week"),
            ("over the last two weeks", date(2023, 5, 16), "over the last two weeks"),
            ("during the past few days", date(2023, 5, 27), "during the past few days"),
            ("the past month", date(2023, 4, 30), "the past month"),
            ("past 3 months", date(2023, 2, 28), "past 3 months"),
        ],
    )
    def test_up_to_and_including_today(self, query: str, first: date, phrase: str) -> None:
        expect_scope(
            f"what did I buy {query}?", TUESDAY, "past_span", first, date(2023, 5, 31), phrase
        )

    def test_the_last_day_of_something_is_no_span(self) -> None:
        assert find_time_phrases("on the last day of the trip", TUESDAY) == []


class TestRelativeWeeks:
    @pytest.mark.parametrize(
        ("query", "first"),
        [
            ("last week", date(2023, 5, 22)),
            ("this week", date(2023, 5, 29)),
            ("next week", date(2023, 6, 5)),
            ("the coming week", date(2023, 6, 5)),
        ],
    )
    def test_iso_weeks(self, query: str, first: date) -> None:
        scope = resolved_scope(query, TUESDAY)
        assert (scope.kind, local_days(scope)) == (
            "relative_week",
            (first, first + timedelta(days=7)),
        )

    def test_last_week_crosses_the_year(self) -> None:
        expect_scope(
            "last week",
            NEW_YEAR,
            "relative_week",
            date(2023, 12, 25),
            date(2024, 1, 1),
            "last week",
        )

    @pytest.mark.parametrize(
        ("as_of", "first"),
        [
            (TUESDAY, date(2023, 5, 27)),
            # asked on a Sunday: that weekend is not over, "last weekend" is the one before
            (datetime(2023, 5, 28, 20, tzinfo=UTC), date(2023, 5, 20)),
            # asked on a Monday: the weekend just ended
            (datetime(2023, 5, 29, 8, tzinfo=UTC), date(2023, 5, 27)),
        ],
    )
    def test_last_weekend(self, as_of: datetime, first: date) -> None:
        for query in ("last weekend", "over the weekend", "this past weekend"):
            scope = resolved_scope(f"what did we do {query}", as_of)
            assert (scope.kind, local_days(scope)) == (
                "weekend",
                (first, first + timedelta(days=2)),
            )

    def test_this_and_next_weekend(self) -> None:
        assert local_days(resolved_scope("this weekend", TUESDAY)) == (
            date(2023, 6, 3),
            date(2023, 6, 5),
        )
        assert local_days(resolved_scope("next weekend", TUESDAY)) == (
            date(2023, 6, 10),
            date(2023, 6, 12),
        )


class TestRelativeMonthsAndYears:
    @pytest.mark.parametrize(
        ("query", "as_of", "first", "end"),
        [
            ("last month", TUESDAY, date(2023, 4, 1), date(2023, 5, 1)),
            ("this month", TUESDAY, date(2023, 5, 1), date(2023, 6, 1)),
            ("next month", TUESDAY, date(2023, 6, 1), date(2023, 7, 1)),
            ("last month", NEW_YEAR, date(2023, 12, 1), date(2024, 1, 1)),
            # February of a leap year: 29 days
            ("last month", datetime(2024, 3, 31, tzinfo=UTC), date(2024, 2, 1), date(2024, 3, 1)),
            ("previous month", MARCH_31, date(2022, 2, 1), date(2022, 3, 1)),
        ],
    )
    def test_calendar_months(self, query: str, as_of: datetime, first: date, end: date) -> None:
        expect_scope(query, as_of, "relative_month", first, end, query)

    @pytest.mark.parametrize(
        ("query", "first"),
        [
            ("last year", date(2022, 1, 1)),
            ("this year", date(2023, 1, 1)),
            ("next year", date(2024, 1, 1)),
        ],
    )
    def test_calendar_years(self, query: str, first: date) -> None:
        expect_scope(
            query, TUESDAY, "relative_year", first, first.replace(year=first.year + 1), query
        )

    def test_earlier_this_year_ends_at_as_of(self) -> None:
        scope = resolved_scope("what did I read earlier this year", TUESDAY)
        assert (scope.kind, scope.start, scope.end) == (
            "earlier",
            datetime(2023, 1, 1, tzinfo=UTC),
            TUESDAY,
        )

    def test_year_number(self) -> None:
        expect_scope(
            "my trips in 2021", TUESDAY, "year", date(2021, 1, 1), date(2022, 1, 1), "in 2021"
        )
        expect_scope(
            "during the year 2019",
            TUESDAY,
            "year",
            date(2019, 1, 1),
            date(2020, 1, 1),
            "during the year 2019",
        )

    def test_a_bare_number_is_no_year(self) -> None:
        assert find_time_phrases("I paid 2021 dollars", TUESDAY) == []


class TestBeforeAfter:
    def test_before_a_date_ends_where_it_starts(self) -> None:
        scope = resolved_scope("what did I own before May 2023?", TUESDAY)
        assert (scope.kind, scope.start, local_days(scope)[1], scope.phrase) == (
            "before",
            None,
            date(2023, 5, 1),
            "before May 2023",
        )

    def test_after_a_date_starts_where_it_ends(self) -> None:
        scope = resolved_scope("anything after last Saturday", TUESDAY)
        assert (scope.kind, local_days(scope)[0], scope.end) == ("after", date(2023, 5, 28), None)

    def test_since_includes_the_phrase(self) -> None:
        scope = resolved_scope("what have I read since March", TUESDAY)
        assert (scope.kind, local_days(scope)[0], scope.end) == ("after", date(2023, 3, 1), None)

    def test_until_includes_the_phrase(self) -> None:
        scope = resolved_scope("until yesterday", TUESDAY)
        assert (scope.kind, scope.start, local_days(scope)[1]) == (
            "before",
            None,
            date(2023, 5, 30),
        )

    @pytest.mark.parametrize(
        ("query", "kind", "anchor"),
        [
            ("Where did I live before I moved to Denver?", "before_event", "I moved to Denver"),
            ("what did I buy after my trip to Japan", "after_event", "my trip to Japan"),
            ("which shoes did I wear since the wedding, and why", "after_event", "the wedding"),
            (
                "How many days before my best friend's party did I order her gift?",
                "before_event",
                "my best friend's party",
            ),
            ("before I was promoted, who was my manager", "before_event", "I was promoted"),
            (
                "months before my anniversary did Rachel get engaged",
                "before_event",
                "my anniversary",
            ),
            (
                "prior to starting the new job what was my commute",
                "before_event",
                "starting the new job",
            ),
        ],
    )
    def test_an_event_is_an_order_and_its_words(self, query: str, kind: str, anchor: str) -> None:
        scope = resolved_scope(query, TUESDAY)
        assert (scope.kind, scope.anchor, scope.start, scope.end) == (kind, anchor, None, None)
        assert not scope.has_interval
        assert not scope.contains(TUESDAY)

    def test_an_event_dated_later_becomes_an_interval(self) -> None:
        scope = resolved_scope("before I moved", TUESDAY)
        moved = datetime(2022, 9, 1, tzinfo=UTC)
        dated = scope.around(moved)
        assert (dated.kind, dated.start, dated.end) == ("before", None, moved)
        assert dated.contains(moved - timedelta(seconds=1)) and not dated.contains(moved)

    def test_a_date_in_the_query_wins_over_an_event(self) -> None:
        scopes = find_time_phrases("after my trip to Japan in April", TUESDAY)
        assert [(s.kind, s.anchor) for s in scopes] == [
            ("after_event", "my trip to Japan"),
            ("named_month", None),
        ]
        assert resolved_scope("after my trip to Japan in April", TUESDAY).kind == "named_month"

    @pytest.mark.parametrize(
        "query",
        [
            "Have I been here before?",
            "after all, what is it",
            "what did I do before that",
            "the move you made after 27. Kg2",
        ],
    )
    def test_no_event(self, query: str) -> None:
        assert resolve_time_phrases(query, TUESDAY) is None


class TestTimeZones:
    def test_days_are_local_to_as_of(self) -> None:
        # 23:40 UTC on Tuesday is already Wednesday 08:40 in Tokyo
        tokyo = TUESDAY.astimezone(ZoneInfo("Asia/Tokyo"))
        scope = resolved_scope("yesterday", tokyo)
        assert (scope.start, scope.end) == (
            datetime(2023, 5, 30, tzinfo=ZoneInfo("Asia/Tokyo")),
            datetime(2023, 5, 31, tzinfo=ZoneInfo("Asia/Tokyo")),
        )
        assert scope.contains(datetime(2023, 5, 29, 16, tzinfo=UTC))  # 30 May 01:00 in Tokyo
        assert not scope.contains(datetime(2023, 5, 30, 16, tzinfo=UTC))

    def test_a_fixed_offset_is_a_zone_too(self) -> None:
        as_of = datetime(2023, 5, 30, 1, 0, tzinfo=timezone(timedelta(hours=-5)))
        scope = resolved_scope("yesterday", as_of)
        assert scope.start == datetime(2023, 5, 29, 5, tzinfo=UTC)

    def test_the_day_the_clocks_go_forward_has_23_hours(self) -> None:
        berlin = ZoneInfo("Europe/Berlin")
        as_of = datetime(2023, 3, 27, 10, tzinfo=berlin)  # Monday after the change
        scope = resolved_scope("what did I do yesterday", as_of)
        assert scope.start is not None and scope.end is not None
        assert (scope.start.date(), scope.end.date()) == (date(2023, 3, 26), date(2023, 3, 27))
        assert scope.end - scope.start == timedelta(hours=24)  # wall clock
        assert scope.end.astimezone(UTC) - scope.start.astimezone(UTC) == timedelta(hours=23)

    def test_last_week_across_the_clocks_going_back(self) -> None:
        berlin = ZoneInfo("Europe/Berlin")
        as_of = datetime(2023, 11, 1, 12, tzinfo=berlin)
        scope = resolved_scope("last week", as_of)
        assert scope.start is not None and scope.end is not None
        assert scope.start.utcoffset() == timedelta(hours=2)  # CEST on Monday 23 October
        assert scope.end.utcoffset() == timedelta(hours=1)  # CET on Monday 30 October
        assert scope.end.astimezone(UTC) - scope.start.astimezone(UTC) == timedelta(hours=169)

    def test_phrases_past_the_calendar_are_dropped(self) -> None:
        end_of_time = datetime(9999, 12, 31, 12, tzinfo=UTC)
        assert resolve_time_phrases("next year", end_of_time) is None
        assert local_days(resolved_scope("next year or last year", end_of_time)) == (
            date(9998, 1, 1),
            date(9999, 1, 1),
        )
        assert resolve_time_phrases("last year", datetime(1, 6, 1, tzinfo=UTC)) is None

    def test_naive_as_of_is_refused(self) -> None:
        with pytest.raises(ValueError, match="aware"):
            resolve_time_phrases("yesterday", datetime(2023, 5, 30))


class TestSeveralPhrases:
    def test_phrases_in_order_without_overlap(self) -> None:
        scopes = find_time_phrases("Last week, two days ago, and in May 2022", TUESDAY)
        assert [scope.phrase for scope in scopes] == ["Last week", "two days ago", "in May 2022"]
        # "Between" joins the first two into one range (test_time_compounds).
        scopes = find_time_phrases("Between last week and two days ago, and in May 2022", TUESDAY)
        assert [scope.phrase for scope in scopes] == [
            "Between last week and two days ago",
            "in May 2022",
        ]

    def test_no_phrase(self) -> None:
        assert resolve_time_phrases("what is my favourite colour", TUESDAY) is None
