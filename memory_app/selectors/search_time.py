"""Time in memory search: the query's time phrase (memory_app.timeq), resolved against
the moment the question is asked (`as_of`), boosts the candidates whose time lies in its
interval. A memory's time is when what it tells began (memory_app.selectors.validity:
`valid_from`, else `occurred_at`, else when it was written), so "I live in Rome" valid
from 2020 but written today is of 2020.

A boost, not a filter: a memory the phrase's reading misses ("last Saturday" meant the
week before) stays in the ranking on its relevance. The weight is small (`TIME_WEIGHT`,
beside seed 004's 0.6 relevance): between candidates about as relevant, the one of the
named time ranks first; a candidate clearly more relevant (by more than TIME_WEIGHT / 0.6
= 1/6 of the pool's relevance range) still ranks above it.

A thing is told when it happens or after it: "what did I watch on 1 May" is answered by
what was said on the 2nd ("I watched it yesterday"), "in March" by a chat in early
April, "the week before 3 August" on the 3rd. So a memory that occurred after the
interval's end keeps part of the boost, falling linearly from 1 at the end to 0 one
`told_after` later: the interval's length, within [TOLD_AFTER_MIN, TOLD_AFTER_MAX]
(TOLD_AFTER_MIN for an interval open at its start). Nothing before the start is boosted.

A memory whose `valid_from` is at or after the end of the named time began after it:
what it states did not hold then ("I moved to Oslo", valid from 2023, does not answer
"where did I live before I moved to Oslo"). Its score is multiplied by
BEGAN_AFTER_FACTOR (part `began_after` = 1), as a memory dated after the question is
(search.after_question): it stays findable, below what held then; it gets no time
credit. Only `valid_from` says when a thing began: `occurred_at` and `created_at` are
when it was told, which may come after what it tells (the told-after reach above), so a
memory without `valid_from` is never weighed so.

The boost ranks the pool the vector and lexical steps found (their top-k): a memory of
the named time that neither found is not brought in. A phrase about an event ("before I
moved") has an interval only once the search has dated the event by the memory that
tells of it (search.engine); undated, it boosts nothing.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from psycopg import sql

from memory_app.selectors.validity import validity_start_sql
from memory_app.timeq import TimeScope, resolve_time_phrases

if TYPE_CHECKING:  # at run time, the search package imports this module
    from memory_app.selectors.search.filters import MemoryFilters

TIME_WEIGHT = 0.1
BEGAN_AFTER_FACTOR = 0.5
TOLD_AFTER_MIN = timedelta(days=7)
TOLD_AFTER_MAX = timedelta(days=31)

# The pool's members whose time lies inside the interval or within its told-after reach,
# and those whose validity began at or after the interval's end: each with its time and
# whether it began after (NULL: no). Any end may be open (NULL).
TIME_PARTS_SQL = sql.SQL("""
    SELECT m.id, {dated}, m.valid_from >= %(end)s::timestamptz FROM memory m
    WHERE m.id = ANY(%(ids)s::uuid[])
      AND ((%(start)s::timestamptz IS NULL OR {dated} >= %(start)s::timestamptz)
           AND (%(reach)s::timestamptz IS NULL OR {dated} < %(reach)s::timestamptz)
           OR m.valid_from >= %(end)s::timestamptz)
""").format(dated=validity_start_sql("m"))

Scored = tuple[uuid.UUID, float, dict[str, float]]


def query_time_scope(query: str, as_of: datetime | None) -> TimeScope | None:
    """The query's time scope when the search was given the moment it is asked; None
    without `as_of` (a caller that does not say when the question is asked keeps the
    ranking it had)."""
    if as_of is None:
        return None
    return resolve_time_phrases(query, as_of)


def told_after(scope: TimeScope) -> timedelta | None:
    """How long after the scope's end a memory still counts as telling of it (None: the
    interval is open at its end, nothing lies after it)."""
    if scope.end is None:
        return None
    if scope.start is None:
        return TOLD_AFTER_MIN
    return min(max(scope.end - scope.start, TOLD_AFTER_MIN), TOLD_AFTER_MAX)


def time_credit(scope: TimeScope, dated: datetime) -> float:
    """1 inside the interval; after its end, falling linearly to 0 over `told_after`."""
    if scope.end is None or dated < scope.end:
        return 1.0
    reach = told_after(scope) or TOLD_AFTER_MIN
    return max(0.0, 1.0 - (dated - scope.end) / reach)


def _reach(scope: TimeScope) -> datetime | None:
    """The end of the told-after reach; None when open (or past the calendar's end)."""
    after = told_after(scope)
    if scope.end is None or after is None:
        return None
    try:
        return scope.end + after
    except OverflowError:
        return None


def within_reach(filters: MemoryFilters, scope: TimeScope) -> MemoryFilters:
    """`filters` narrowed to the memories whose time lies in the scope's interval or its
    told-after reach: the part of the pool `apply_time_scope` gives a time credit. The
    caller's own filters, `occurred_from` / `occurred_to` among them, still apply."""
    return dataclasses.replace(filters, dated_from=scope.start, dated_to=_reach(scope))


def apply_time_scope(cursor: Any, scope: TimeScope | None, scored: list[Scored]) -> list[Scored]:
    """`scored` (id, score, parts) with the `time` part in each hit's parts (its
    `time_credit`, 0 outside the scope's reach) and TIME_WEIGHT times it added to the
    score, and the `began_after` part, its score multiplied by BEGAN_AFTER_FACTOR when 1.
    One query, only when the scope has an interval."""
    dated: dict[uuid.UUID, tuple[float, bool]] = {}
    if scope is not None and scope.has_interval and scored:
        cursor.execute(
            TIME_PARTS_SQL,
            {"ids": [pk for pk, _, _ in scored], "start": scope.start, "reach": _reach(scope),
             "end": scope.end},
        )  # fmt: skip
        dated = {
            pk: (0.0, True) if began_after else (round(time_credit(scope, at), 6), False)
            for pk, at, began_after in cursor.fetchall()
        }
    out: list[Scored] = []
    for pk, score, parts in scored:
        time, began_after = dated.get(pk, (0.0, False))
        score += TIME_WEIGHT * time
        if began_after:
            score *= BEGAN_AFTER_FACTOR
        parts = {**parts, "time": time, "began_after": 1.0 if began_after else 0.0}
        out.append((pk, round(score, 6), parts))
    return out
