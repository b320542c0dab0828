"""The current state in memory search: newer facts win questions about "now".

A query that asks about the current state ("where do I live now?", "do I still work at
Acme?", "what is my address at the moment?", "currently", "these days", "anymore",
"current"; or a question in the present tense about the user, "where do I live?", "what
is my job?", "am I vegetarian?", "do I have a car?", without a word of the past, "did",
"was", "used to", "before", "previously", nor a time phrase of another time than now)
down-weights the candidates that do not hold at the search's `now` (its
`as_of`): those whose validity interval does not hold it (`valid_to` at or before now,
or `valid_from` after it), and those superseded (`superseded_by`,
memory_app.services.supersession) by a memory whose own validity had begun by then.
Superseding ends the older memory where the newer starts, so asked at an earlier
`as_of`, the older holds and the newer, not yet begun, does not. Their score is
multiplied by SUPERSEDED_FACTOR, part `superseded` = 1, and a superseded memory never
ranks above the memory that replaced it when both are candidates. They stay in the
results, with their dates: "where did I live before?" still reads them, and a question
that does not ask about now ranks them on relevance alone (part `superseded` = 0 for
every hit).

`valid_at`, a filter (MemoryFilters): only the memories whose interval holds that
instant, valid_from <= t < valid_to, an open end holding every time.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from psycopg import sql

from memory_app.selectors.validity import validity_start_sql
from memory_app.timeq import resolve_time_phrases

SUPERSEDED_FACTOR = 0.5
# Below its successor by this much (scores are rounded to 6 decimals).
_BELOW = 1e-6

_CURRENT_STATE = re.compile(
    r"\b(?:now|nowadays|currently|current|still|anymore|any\s+more|presently|"
    r"these\s+days|at\s+the\s+moment|at\s+present|right\s+now)\b",
    re.IGNORECASE,
)

# The pool's members that do not hold at %(now)s, with what replaced them. A successor's
# start is when what it tells began (memory_app.selectors.validity).
NOT_CURRENT_SQL = sql.SQL("""
    SELECT m.id, m.superseded_by_id FROM memory m
    LEFT JOIN memory successor ON successor.id = m.superseded_by_id
    WHERE m.id = ANY(%(ids)s::uuid[])
      AND (m.valid_to <= %(now)s::timestamptz
           OR m.valid_from > %(now)s::timestamptz
           OR {successor_start}
              <= %(now)s::timestamptz)
""").format(successor_start=validity_start_sql("successor"))

Scored = tuple[uuid.UUID, float, dict[str, float]]


# A question in the present tense about the user: "where do I live", "what is my job",
# "am I vegetarian", "do I have a car", "what's my address".
_PRESENT_ABOUT_USER = re.compile(
    r"\b(?:(?:do|am)\s+i|(?:is|are)\s+my|(?:what|where|who|which|how)'s\s+my)\b",
    re.IGNORECASE,
)
# Words that put such a question in the past: "where did I live", "what was my job",
# "used to", "before", "previously".
_PAST = re.compile(
    r"\b(?:did|was|were|had|used\s+to|before|previously|formerly|earlier|"
    r"originally|ago|back\s+then|at\s+first)\b",
    re.IGNORECASE,
)


def asks_current_state(query: str, now: datetime | None = None) -> bool:
    """Whether the query asks about how things are now (module docstring): a word of now
    ("now", "currently", "still", ...), or a question in the present tense about the
    user ("where do I live") with no word of the past and, read against `now`, no time
    phrase but one that holds `now` ("today"): "in 2020" or "next week" ask of then."""
    if _CURRENT_STATE.search(query) is not None:
        return True
    if _PRESENT_ABOUT_USER.search(query) is None or _PAST.search(query) is not None:
        return False
    return now is None or not _names_another_time(query, now)


def _names_another_time(query: str, now: datetime) -> bool:
    scope = resolve_time_phrases(query, now)
    return scope is not None and not scope.contains(now)


# The WHERE clause of a search's `valid_at` filter: the memories whose validity interval
# holds the moment `%(f_valid_at)s`.
VALID_AT_SQL = sql.SQL(
    "(m.valid_from IS NULL OR m.valid_from <= %(f_valid_at)s)"
    " AND (m.valid_to IS NULL OR m.valid_to > %(f_valid_at)s)"
)


def apply_currency(cursor: Any, query: str, now: datetime, scored: list[Scored]) -> list[Scored]:
    """`scored` (id, score, parts) with part `superseded` in every hit's parts, and, when
    the query asks about the current state, the hits that no longer hold at `now`
    down-weighted and each kept below its successor. One query, only then."""
    stale: dict[uuid.UUID, uuid.UUID | None] = {}
    if scored and asks_current_state(query, now):
        cursor.execute(NOT_CURRENT_SQL, {"ids": [pk for pk, _, _ in scored], "now": now})
        stale = {row[0]: row[1] for row in cursor.fetchall()}
    scores: dict[uuid.UUID, float] = {}
    for pk, score, _ in scored:
        scores[pk] = round(score * SUPERSEDED_FACTOR, 6) if pk in stale else score
    # A chain (A by B by C) settles in as many passes as it is long.
    for _ in range(len(stale)):
        moved = False
        for pk, successor in stale.items():
            if successor in scores and scores[pk] >= scores[successor]:
                scores[pk] = round(scores[successor] - _BELOW, 6)
                moved = True
        if not moved:
            break
    return [
        (pk, scores[pk], {**parts, "superseded": 1.0 if pk in stale else 0.0})
        for pk, _, parts in scored
    ]
