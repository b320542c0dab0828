"""What the time-phrase tests share: fixed `as_of` moments and checks of a resolved
scope as local dates."""

from __future__ import annotations

from datetime import UTC, date, datetime

from memory_app.timeq import TimeScope, resolve_time_phrases

# Tuesday 30 May 2023, 23:40 UTC (LongMemEval writes its question dates this way).
TUESDAY = datetime(2023, 5, 30, 23, 40, tzinfo=UTC)
# Monday 1 January 2024, 09:00 UTC: every "last ..." crosses a year.
NEW_YEAR = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
# Thursday 31 March 2022: month lengths.
MARCH_31 = datetime(2022, 3, 31, 12, 0, tzinfo=UTC)


def resolved_scope(query: str, as_of: datetime) -> TimeScope:
    scope = resolve_time_phrases(query, as_of)
    assert scope is not None, query
    return scope


def local_days(scope: TimeScope) -> tuple[date | None, date | None]:
    """The interval as local dates (both ends at local midnight)."""
    for end in (scope.start, scope.end):
        if end is not None:
            assert (end.hour, end.minute, end.second) == (0, 0, 0), scope
    return (
        scope.start.date() if scope.start is not None else None,
        scope.end.date() if scope.end is not None else None,
    )


def expect_scope(
    query: str, as_of: datetime, kind: str, first: date, end: date, phrase: str
) -> None:
    scope = resolved_scope(query, as_of)
    assert (scope.kind, local_days(scope), scope.phrase) == (kind, (first, end), phrase)
    assert query[scope.span[0] : scope.span[1]] == scope.phrase
