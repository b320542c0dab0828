"""Context candidates from the user's long-term memories: those the memory search finds
for the query, one line each of the "memories" section, and their direct relations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import Candidate
from memory_app.selectors.context.lines import line
from memory_app.selectors.context.recall import TURN_SOURCES
from memory_app.selectors.memories import Actor, memory_neighbours
from memory_app.selectors.search import MemoryFilters, memory_search

if TYPE_CHECKING:
    from sessions_app.models import Tenant

DEFAULT_MEMORY_LIMIT = 12  # long-term memories searched for a context (seed 004's k=12)
RELATED_SIGNAL_SHARE = 0.8  # a related memory's signal against its anchor's
RELATED_ORDER = 100  # related memories render after the found ones


def memory_candidates(tenant: Tenant, actor: Actor, query: str, limit: int) -> list[Candidate]:
    """Long-term memories that answer `query`, as `actor` may see them: visibility is
    the search's, the context only ranks. The user's conversation turns are left out:
    they are recalled on their own (`candidates.recalled`, `candidates.past`)."""
    if not query.strip() or limit <= 0:
        return []
    hits = memory_search(
        tenant=tenant,
        actor=actor,
        query=query,
        limit=limit,
        filters=MemoryFilters(exclude_sources=TURN_SOURCES),
    ).hits
    # Two memories that read the same (a preference stated in two turns) are one line.
    by_text: dict[str, Any] = {}
    for hit in hits:
        by_text.setdefault(line(hit.memory.summary or hit.memory.content), hit)
    return _related_memory_candidates(tenant, actor, list(by_text.values())) + [
        Candidate(
            f"memory:{hit.memory.pk}",
            "memory",
            "memories",
            text,
            "memory",
            hit.memory.last_accessed_at or hit.memory.updated_at,
            float(hit.memory.importance),
            (index,),
        )
        for index, (text, hit) in enumerate(by_text.items())
    ]


def _related_memory_candidates(tenant: Tenant, actor: Actor, hits: list[Any]) -> list[Candidate]:
    """A found memory's direct relations come with it (seed 001: "supersedes",
    "derived_from", "related_to"), as kind `related_memory` with a little less signal
    than their anchor, so the breakdown shows why they are there."""
    anchors = {hit.memory.pk: hit.memory for hit in hits}
    out: list[Candidate] = []
    for index, (anchor, kind, memory) in enumerate(
        memory_neighbours(tenant=tenant, actor=actor, memory_ids=list(anchors))
    ):
        out.append(
            Candidate(
                f"memory:{memory.pk}",
                "related_memory",
                "memories",
                line(f"({kind.replace('_', ' ')}) {memory.summary or memory.content}"),
                "memory",
                memory.last_accessed_at or memory.updated_at,
                RELATED_SIGNAL_SHARE
                * min(float(memory.importance), float(anchors[anchor].importance)),
                (RELATED_ORDER + index,),
            )
        )
    return out
