"""A small credit for the lines around the pool's lead in its conversation.

A conversation answers across its lines: "When did Melanie run the charity race?" is
matched best by Caroline's "That charity race sounds great!", while the date is in
Melanie's line just before it, which shares few words with the question. The lead is
the line of a conversation that ranks first (`search.lead`). Every other member of its
thread (`thread_key`) at most NEIGHBOUR_REACH positions from it (`thread_order`) gets
NEIGHBOUR_WEIGHT added to its score (part `thread`), halved with the rest of its score
when it began after the time the query names (part `began_after`). A memory outside a
thread is never credited.

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

from memory_app.selectors.search.lead import Place, lead_line, places_of
from memory_app.selectors.search_time import BEGAN_AFTER_FACTOR

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

NEIGHBOUR_WEIGHT = 0.08
NEIGHBOUR_REACH = 3


def apply_thread_neighbours(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]
) -> list[Scored]:
    """`scored` with the lead's thread neighbours credited and every hit's part
    `thread` set (NEIGHBOUR_WEIGHT or 0)."""
    places = places_of(scored, candidates)
    lead = lead_line(scored, places)
    out: list[Scored] = []
    for pk, score, parts in scored:
        place = places[pk]
        credit = NEIGHBOUR_WEIGHT if lead is not None and _neighbour(lead, pk, place) else 0.0
        if credit and parts.get("began_after"):
            credit *= BEGAN_AFTER_FACTOR
        out.append((pk, round(score + credit, 6), {**parts, "thread": round(credit, 6)}))
    return out


def _neighbour(lead: tuple[uuid.UUID, Place], pk: uuid.UUID, place: Place | None) -> bool:
    """Whether the member at `place` is another line of the lead's thread within
    NEIGHBOUR_REACH of it."""
    lead_pk, (thread, order) = lead
    if pk == lead_pk or place is None:
        return False
    return place[0] == thread and abs(place[1] - order) <= NEIGHBOUR_REACH
