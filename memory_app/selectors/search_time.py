"""Time in memory search: the query's time phrase (memory_app.timeq), resolved against
the moment the question is asked (`as_of`), boosts the candidates whose `occurred_at`
lies in its interval.

A boost, not a filter: a memory without `occurred_at` (a fact or preference written
without one), or one the phrase's reading misses ("last Saturday" meant the week
before), stays in the ranking on its relevance. The weight is small (`TIME_WEIGHT`,
beside seed 004's 0.6 relevance): between candidates about as relevant, the one of the
named time ranks first; a candidate clearly more relevant (by more than TIME_WEIGHT / 0.6
= 1/6 of the pool's relevance range) still ranks above it.

The boost ranks the pool the vector and lexical steps found (their top-k): a memory of
the named time that neither found is not brought in. A phrase about an event ("before I
moved") has no interval here: nothing is boosted.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from psycopg import sql

from memory_app.timeq import TimeScope, resolve_time_phrases

TIME_WEIGHT = 0.1

# The pool's members that occurred inside the interval. Either end may be open (NULL).
IN_INTERVAL_SQL = sql.SQL("""
    SELECT id FROM memory
    WHERE id = ANY(%(ids)s::uuid[]) AND occurred_at IS NOT NULL
      AND (%(start)s::timestamptz IS NULL OR occurred_at >= %(start)s::timestamptz)
      AND (%(end)s::timestamptz IS NULL OR occurred_at < %(end)s::timestamptz)
""")

Scored = tuple[uuid.UUID, float, dict[str, float]]


def query_time_scope(query: str, as_of: datetime | None) -> TimeScope | None:
    """The query's time scope when the search was given the moment it is asked; None
    without `as_of` (a caller that does not say when the question is asked keeps the
    ranking it had)."""
    if as_of is None:
        return None
    return resolve_time_phrases(query, as_of)


def apply_time_scope(cursor: Any, scope: TimeScope | None, scored: list[Scored]) -> list[Scored]:
    """`scored` (id, score, parts) with the `time` part in each hit's parts (1 when the
    memory occurred inside the scope's interval, else 0) and TIME_WEIGHT times it added
    to the score. One query, only when the scope has an interval."""
    inside: set[uuid.UUID] = set()
    if scope is not None and scope.has_interval and scored:
        cursor.execute(
            IN_INTERVAL_SQL,
            {"ids": [pk for pk, _, _ in scored], "start": scope.start, "end": scope.end},
        )
        inside = {row[0] for row in cursor.fetchall()}
    out: list[Scored] = []
    for pk, score, parts in scored:
        time = 1.0 if pk in inside else 0.0
        out.append((pk, round(score + TIME_WEIGHT * time, 6), {**parts, "time": time}))
    return out
