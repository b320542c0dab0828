"""The pool's lead: the line of a conversation that ranks first by fusion and time (the
score after `apply_time_scope`) among the members in a thread. Two ranking steps start
from it: the credit of the lines around it (`thread_neighbours`) and the fusion's third
signal, its words (`feedback`). A memory outside threads (a fact extracted from the
same turn, say) may rank above it and still leaves it the lead: it is not a line of a
conversation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from memory_app.selectors.search.fusion import best_first

if TYPE_CHECKING:
    from memory_app.selectors.search.fusion import Scored
    from memory_app.selectors.search.pool import Candidate

Place = tuple[str, int]  # a line's thread and its position in it


def place_of(candidate: Candidate | None) -> Place | None:
    """Where the member stands in a conversation: its thread and position, or None
    when it is not a line of one."""
    if candidate is None or not candidate.thread_key or candidate.thread_order is None:
        return None
    return candidate.thread_key, candidate.thread_order


def lead_line(
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


def places_of(
    scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]
) -> dict[uuid.UUID, Place | None]:
    """Every scored member's place (`place_of`)."""
    return {pk: place_of(candidates.get(pk)) for pk, _, _ in scored}
