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

A question about another time asks about the state then, and is weighed the same way
against the time it names (`state_window`): "where did I live before I moved to Oslo?"
against the instant before the move (the memory that held then wins over the one that
followed it and the one it replaced), "after I moved" against the move's instant, "in
2021" against the year (a memory that held at any moment of it holds). A memory that
did not hold then is also kept below the hits of its user and subject that did. A
memory whose `valid_from` is at or after the named time's end is halved once, by the
time scope's `began_after` (memory_app.selectors.search_time), not twice. Memories
without validity and never superseded (conversation turns, episodes) are never weighed
so.

A question about the current state also prefers what is newer among all its hits, not
only among those that state a subject (memory_app.selectors.latest, part `latest`): "I
just moved into a flat in Lisbon" said in March ranks below "I moved to Porto" said in
May for "where do I live now?", though no rule reads a subject from the first.

`valid_at`, a filter (MemoryFilters): only the memories whose interval holds that
instant, valid_from <= t < valid_to, an open end holding every time. A search with it
asks of that instant: a question about the current state is weighed against it, not
against `now`, so what held then is not weighed as superseded since.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from psycopg import sql

from memory_app.selectors.latest import LATEST_WEIGHT, latest_credits
from memory_app.selectors.validity import validity_start_sql
from memory_app.timeq import TimeScope, resolve_time_phrases

SUPERSEDED_FACTOR = 0.5
# Below its successor by this much (scores are rounded to 6 decimals).
_BELOW = 1e-6

_CURRENT_STATE = re.compile(
    r"\b(?:now|nowadays|currently|current|still|anymore|any\s+more|presently|"
    r"these\s+days|at\s+the\s+moment|at\s+present|right\s+now)\b",
    re.IGNORECASE,
)

# The pool's members, each with what replaced it, its user and subject, whether it held
# at no moment of [%(first)s, %(last)s] (both inclusive; one instant when they are equal;
# false, or NULL for a memory with no validity and no successor: it held), and when what
# it tells began. A successor's start is when what it tells began too
# (memory_app.selectors.validity).
NOT_CURRENT_SQL = sql.SQL("""
    SELECT m.id, m.superseded_by_id, m.user_id, m.subject, {held_not}, {began} FROM memory m
    LEFT JOIN memory successor ON successor.id = m.superseded_by_id
    WHERE m.id = ANY(%(ids)s::uuid[])
""").format(
    held_not=sql.SQL("""(m.valid_to <= %(first)s::timestamptz
           OR m.valid_from > %(last)s::timestamptz
           OR {successor_start}
              <= %(first)s::timestamptz)""").format(
        successor_start=validity_start_sql("successor")
    ),
    began=validity_start_sql("m"),
)
# The last moment before an exclusive end, at the database's resolution.
_INSTANT = timedelta(microseconds=1)

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


def state_window(
    current: bool, now: datetime, scope: TimeScope | None, valid_at: datetime | None = None
) -> tuple[datetime, datetime] | None:
    """The moments whose state the query asks about, first and last inclusive (module
    docstring): when it asks about the `current` state (`asks_current_state`), `now`, or
    the search's `valid_at` when it has one (its hits are what held then, so then is
    their present); for a dated time phrase, the instant before the end of an interval
    open at its start ("before I moved"), the start of one open at its end ("after I
    moved"), else the interval; None when it asks about neither."""
    if current:
        present = valid_at or now
        return present, present
    if scope is None or not scope.has_interval:
        return None
    if scope.start is None:
        assert scope.end is not None
        return scope.end - _INSTANT, scope.end - _INSTANT
    if scope.end is None:
        return scope.start, scope.start
    return scope.start, scope.end - _INSTANT


@dataclass
class _Held:
    """What the window's query read: the hits that did not hold then, with their
    successors, the user and subject of every hit that states one, and when what each
    hit tells began."""

    stale: dict[uuid.UUID, uuid.UUID | None] = field(default_factory=dict)
    subjects: dict[uuid.UUID, tuple[str, str]] = field(default_factory=dict)
    began: dict[uuid.UUID, datetime] = field(default_factory=dict)


def _held(cursor: Any, ids: list[uuid.UUID], window: tuple[datetime, datetime]) -> _Held:
    cursor.execute(NOT_CURRENT_SQL, {"ids": ids, "first": window[0], "last": window[1]})
    held = _Held()
    for pk, successor, user_id, subject, held_not, began in cursor.fetchall():
        if held_not:
            held.stale[pk] = successor
        if subject:
            held.subjects[pk] = (user_id, subject)
        held.began[pk] = began
    return held


def apply_currency(
    cursor: Any,
    query: str,
    now: datetime,
    scored: list[Scored],
    scope: TimeScope | None = None,
    valid_at: datetime | None = None,
) -> list[Scored]:
    """`scored` (id, score, parts) with part `superseded` in every hit's parts, and, when
    the query asks about the state at some time (`state_window`: now or the search's
    `valid_at`, or the time its phrase names), the hits that did not hold then
    down-weighted (once: a hit weighed as begun after the named time, part
    `began_after`, is not halved again) and each kept below its successor and below the
    hits of its user and subject that held then; for a question about the current state,
    each hit's `latest` credit (memory_app.selectors.latest) added before that. One
    query, only then."""
    current = bool(scored) and asks_current_state(query, now)
    window = state_window(current, now, scope, valid_at) if scored else None
    held = _held(cursor, [pk for pk, _, _ in scored], window) if window else _Held()
    relevance = {pk: parts["relevance"] for pk, _, parts in scored}
    latest = latest_credits(held.began, relevance, valid_at or now) if current else {}
    scores: dict[uuid.UUID, float] = {}
    for pk, score, parts in scored:
        score += LATEST_WEIGHT * latest.get(pk, 0.0)
        halve = pk in held.stale and not parts.get("began_after")
        scores[pk] = round(score * SUPERSEDED_FACTOR if halve else score, 6)
    _keep_below_holders(scores, held)
    _keep_below_successors(scores, held.stale)
    return [
        (pk, scores[pk], {**parts, "superseded": 1.0 if pk in held.stale else 0.0,
                          "latest": round(latest.get(pk, 0.0), 6)})
        for pk, _, parts in scored
    ]  # fmt: skip


def _keep_below_holders(scores: dict[uuid.UUID, float], held: _Held) -> None:
    """Each stale hit that states a subject just below the best hit of its user and
    subject that held in the window: "where did I live before I moved to Oslo?" ranks
    the home of then above the move, however well the move's words match."""
    best: dict[tuple[str, str], float] = {}
    for pk, key in held.subjects.items():
        if pk not in held.stale:
            best[key] = max(best.get(key, scores[pk]), scores[pk])
    for pk in held.stale:
        holder = best.get(held.subjects[pk]) if pk in held.subjects else None
        if holder is not None and scores[pk] >= holder:
            scores[pk] = round(holder - _BELOW, 6)


def _keep_below_successors(
    scores: dict[uuid.UUID, float], stale: dict[uuid.UUID, uuid.UUID | None]
) -> None:
    """Each stale memory's score just below its successor's when that is a hit too. A
    chain (A by B by C) settles in as many passes as it is long."""
    for _ in range(len(stale)):
        moved = False
        for pk, successor in stale.items():
            if successor in scores and scores[pk] >= scores[successor]:
                scores[pk] = round(scores[successor] - _BELOW, 6)
                moved = True
        if not moved:
            break
