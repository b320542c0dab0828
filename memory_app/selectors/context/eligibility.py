"""Which candidates compete for the budget: seed 004's page-out, then the relevance floor.

Page-out (seed 004's `should_evict`): a verbatim turn outside the window older than
ENGRAM_CONTEXT_EVICT_TURN_MINUTES and, when there is a query, a snippet (a found memory,
a tool output, a line from a rotated predecessor) whose similarity to it is below
ENGRAM_CONTEXT_SIMILARITY_FLOOR are evicted: they do not compete for the budget at all,
and the breakdown lists them as excluded with reason `evicted_age` or
`evicted_below_similarity`.

Relevance floor: with a query, the kinds in RELEVANCE_FLOORED go in only if they relate
to it (ENGRAM_CONTEXT_MIN_SEMANTIC): a context is read by a model whose attention and
price grow with every token, so the budget is a ceiling, not a target. Session state,
the reserved window and failures are always offered; the breakdown lists what the floor
leaves out with reason `not_relevant`.

Both floors judge by the cosine alone, so neither applies to what the memory search
relates to the query by more than its vector (`exempt`: a query word in it, the time
the query names, or the subject the query asks for; `SearchHit.beyond_vector`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from memory_app.selectors.context.candidate import Candidate

# What seed 004 calls snippets. A `related_memory` is not one: it comes in because of
# its anchor's edge, not because it matches the query.
SNIPPET_KINDS = frozenset({"memory", "tool_output", "previous_turn", "previous_summary"})
RELEVANCE_FLOORED = frozenset(
    {"summary", "milestone", "recalled_turn", "past_turn", "memory", "turn"}
)


@dataclass
class Eligible:
    """The candidates offered to the packer, and the others with why they are not."""

    offered: list[Candidate] = field(default_factory=list)
    evicted: list[tuple[Candidate, str]] = field(default_factory=list)
    unrelated: list[Candidate] = field(default_factory=list)


def eligible(
    candidates: list[Candidate],
    *,
    window: list[str],
    semantic: dict[str, float],
    exempt: set[str],
    query: str,
    now: datetime,
) -> Eligible:
    """`candidates` sorted into offered, evicted and unrelated, each in the given order.
    `exempt`: the keys the similarity floors let through (the found memories and turns
    the search supports by more than a vector); the relevance floor also lets the
    `window` through."""
    out = Eligible()
    kept: list[Candidate] = []
    window_keys = set(window)
    has_query = bool(query.strip())
    for candidate in candidates:
        reason = eviction_reason(
            candidate, window=window_keys, semantic=semantic, has_query=has_query, now=now,
            exempt=exempt,
        )  # fmt: skip
        if reason is None:
            kept.append(candidate)
        else:
            out.evicted.append((candidate, reason))
    out.offered, out.unrelated = _relevant(kept, semantic, window_keys | exempt, query)
    return out


def eviction_reason(
    candidate: Candidate,
    *,
    window: set[str],
    semantic: dict[str, float],
    has_query: bool,
    now: datetime,
    exempt: set[str],
) -> str | None:
    """Why seed 004's page-out drops the candidate before packing, or None."""
    if candidate.kind == "turn" and candidate.key not in window and candidate.at is not None:
        age = timedelta(minutes=float(settings.ENGRAM_CONTEXT_EVICT_TURN_MINUTES))
        if now - candidate.at > age:
            return "evicted_age"
    floor = float(settings.ENGRAM_CONTEXT_SIMILARITY_FLOOR)
    if (
        has_query
        and candidate.kind in SNIPPET_KINDS
        and candidate.key not in exempt
        and semantic.get(candidate.key, 0.0) < floor
    ):
        return "evicted_below_similarity"
    return None


def _relevant(
    candidates: list[Candidate], semantic: dict[str, float], exempt: set[str], query: str
) -> tuple[list[Candidate], list[Candidate]]:
    """(offered, left out as unrelated to the query): see RELEVANCE_FLOORED."""
    floor = float(settings.ENGRAM_CONTEXT_MIN_SEMANTIC)
    if not query.strip() or floor <= 0:
        return candidates, []
    offered, unrelated = [], []
    for candidate in candidates:
        low = semantic.get(candidate.key, 0.0) < floor
        if low and candidate.kind in RELEVANCE_FLOORED and candidate.key not in exempt:
            unrelated.append(candidate)
        else:
            offered.append(candidate)
    return offered, unrelated
