"""A small credit for the lines around the pool's lead in its conversation.

A conversation answers across its lines: "When did Melanie run the charity race?" is
matched best by Caroline's "That charity race sounds great!", while the date is in
Melanie's line just before it, which shares few words with the question. The lead is
the member that ranks first by fusion and time (the score after `apply_time_scope`);
every other member of its thread (`thread_key`) at most NEIGHBOUR_REACH positions from
it (`thread_order`) gets NEIGHBOUR_WEIGHT added to its score (part `thread`), halved
with the rest of its score when it began after the time the query names (part
`began_after`). A memory outside a thread, or a lead outside one, moves nothing.

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
    """The best-scored member, when it belongs to a thread; ties go to the more relevant,
    then the lower id, as the search's final order breaks them."""
    if not scored:
        return None
    pk = min(scored, key=lambda hit: (-hit[1], -hit[2].get("relevance", 0.0), str(hit[0])))[0]
    lead = candidates.get(pk)
    if lead is None or not lead.thread_key or lead.thread_order is None:
        return None
    return pk


def _neighbours(lead: uuid.UUID, pk: uuid.UUID, candidates: Mapping[uuid.UUID, Candidate]) -> bool:
    """Whether `pk` is another line of the lead's thread within NEIGHBOUR_REACH of it."""
    if pk == lead or pk not in candidates:
        return False
    one, other = candidates[lead], candidates[pk]
    return (
        other.thread_key == one.thread_key
        and other.thread_order is not None
        and one.thread_order is not None
        and abs(other.thread_order - one.thread_order) <= NEIGHBOUR_REACH
    )
