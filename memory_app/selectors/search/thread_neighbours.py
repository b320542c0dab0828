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
    lead = _lead(scored, candidates)
    out: list[Scored] = []
    for pk, score, parts in scored:
        credit = NEIGHBOUR_WEIGHT if lead is not None and _neighbours(lead, pk, candidates) else 0.0
        if credit and parts.get("began_after"):
            credit *= BEGAN_AFTER_FACTOR
        out.append((pk, round(score + credit, 6), {**parts, "thread": round(credit, 6)}))
    return out


def _lead(scored: list[Scored], candidates: Mapping[uuid.UUID, Candidate]) -> uuid.UUID | None:
    """The best-scored member that belongs to a thread, None when none does; ties go to
    the more relevant, then the lower id, as the search's final order breaks them."""
    threaded = [hit for hit in scored if _in_thread(candidates.get(hit[0]))]
    if not threaded:
        return None
    return min(threaded, key=lambda hit: (-hit[1], -hit[2].get("relevance", 0.0), str(hit[0])))[0]


def _in_thread(candidate: Candidate | None) -> bool:
    """Whether the member is a line of a conversation: a thread and a place in it."""
    if candidate is None:
        return False
    return bool(candidate.thread_key) and candidate.thread_order is not None


def _neighbours(lead: uuid.UUID, pk: uuid.UUID, candidates: Mapping[uuid.UUID, Candidate]) -> bool:
    """Whether `pk` is another line of the lead's thread within NEIGHBOUR_REACH of it."""
    other = candidates.get(pk)
    if pk == lead or other is None or not _in_thread(other):
        return False
    one = candidates[lead]
    assert one.thread_order is not None and other.thread_order is not None  # _in_thread
    return (
        other.thread_key == one.thread_key
        and abs(other.thread_order - one.thread_order) <= NEIGHBOUR_REACH
    )
