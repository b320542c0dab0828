"""A small credit for the lines around the pool's lead in its conversation.

A conversation answers across its lines: "When did Melanie run the charity race?" is
matched best by Caroline's "That charity race sounds great!", while the date is in
Melanie's line just before it, which shares few words with the question. The lead is
the line of a conversation that ranks first by fusion and time (the score after
`apply_time_scope`) among the members in a thread: a memory outside threads (a fact
extracted from the same turn, say) may rank above it and still leaves it the lead.
Every other member of its thread (`thread_key`) at most NEIGHBOUR_REACH positions from
it (`thread_order`) gets NEIGHBOUR_WEIGHT added to its score (part `thread`), halved
with the rest of its score when it began after the time the query names (part
`began_after`). A memory outside a thread is never credited.

The credit lifts a neighbour over members of about its own score, never over a clear
gap: 0.08 against the 0.6 weight of relevance. Only members of the pool are credited:
the step reads no rows.

Chosen on both dev sets together, read from their pools offline (LoCoMo's short turns
in threads, LongMemEval's long messages in sessions);
docs/decisions/search-thread-neighbours.md has the figures.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memory_app.selectors.search.fusion import best_first
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

NEIGHBOUR_WEIGHT = 0.08
NEIGHBOUR_REACH = 3

Place = tuple[str, int]  # a line's thread and its position in it


def apply_thread_neighbours(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]
) -> list[Scored]:
    """`scored` with the lead's thread neighbours credited and every hit's part
    `thread` set (NEIGHBOUR_WEIGHT or 0)."""
    places = {pk: _place(candidates.get(pk)) for pk, _, _ in scored}
    lead = _lead(scored, places)
    out: list[Scored] = []
    for pk, score, parts in scored:
        place = places[pk]
        credit = NEIGHBOUR_WEIGHT if lead is not None and _neighbour(lead, pk, place) else 0.0
        if credit and parts.get("began_after"):
            credit *= BEGAN_AFTER_FACTOR
        out.append((pk, round(score + credit, 6), {**parts, "thread": round(credit, 6)}))
    return out


def _place(candidate: Candidate | None) -> Place | None:
    """Where the member stands in a conversation: its thread and position, or None
    when it is not a line of one."""
    if candidate is None or not candidate.thread_key or candidate.thread_order is None:
        return None
    return candidate.thread_key, candidate.thread_order


def _lead(
    scored: list[Scored], places: Mapping[uuid.UUID, Place | None]
) -> tuple[uuid.UUID, Place] | None:
    """The best member in a thread by the search's final order (`best_first`), with its
    place; None when no member is in a thread."""
    lines = {pk: place for pk, place in places.items() if place is not None}
    threaded = [hit for hit in scored if hit[0] in lines]
    if not threaded:
        return None
    pk = min(threaded, key=best_first)[0]
    return pk, lines[pk]


def _neighbour(lead: tuple[uuid.UUID, Place], pk: uuid.UUID, place: Place | None) -> bool:
    """Whether the member at `place` is another line of the lead's thread within
    NEIGHBOUR_REACH of it."""
    lead_pk, (thread, order) = lead
    if pk == lead_pk or place is None:
        return False
    return place[0] == thread and abs(place[1] - order) <= NEIGHBOUR_REACH
