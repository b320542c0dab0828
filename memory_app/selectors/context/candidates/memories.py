"""Context candidates from the user's long-term memories: those the memory search finds
for the query asked at `as_of`, one line each of the "memories" section labelled with its
date, and their direct relations."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory_app.selectors.context.candidate import Candidate, FoundCandidates
from memory_app.selectors.context.lines import MAX_LINE_TOKENS, line, memory_label
from memory_app.selectors.context.recall import TURN_SOURCES
from memory_app.selectors.memories import Actor, memory_neighbours
from memory_app.selectors.search import MemoryFilters, memory_search
from memory_app.selectors.search.after_question import happened_by
from memory_app.window.passages import best_passage

if TYPE_CHECKING:
    from memory_app.models import Memory
    from memory_app.selectors.search import SearchHit
    from sessions_app.models import Tenant

DEFAULT_MEMORY_LIMIT = 12  # long-term memories searched for a context (seed 004's k=12)
RELATED_SIGNAL_SHARE = 0.8  # a related memory's signal against its anchor's
RELATED_ORDER = 100  # related memories render after the found ones


def memory_candidates(
    tenant: Tenant,
    actor: Actor,
    query: str,
    limit: int,
    as_of: datetime,
    session_id: uuid.UUID | None = None,
    said_by: datetime | None = None,
) -> FoundCandidates:
    """Long-term memories that answer `query` asked at `as_of` (its time phrases read
    against it), as `actor` may see them: visibility is the search's, the context only
    ranks. Asked in the past, what occurred after `as_of` had not happened yet and is
    left out (`happened_by`), and so is what was not known by then (`said_by`, set
    beyond the clock skew: `candidates.said`): a memory noted later (`created_at`, such
    as one extracted from a later turn) unless it is dated (`occurred_at`) by then, as
    history imported after the fact is. Each carries the search's cosine as its semantic
    score, and is let through the similarity floors when the search relates it to the
    query by more (`SearchHit.beyond_vector`: a query word, the time the query names, or
    the subject it asks for, "where do I live?" and "I moved to Porto").
    The user's conversation turns are left out: they are recalled on their own
    (`candidates.recalled`, `candidates.past`); so are the compaction episodes of the
    context's own session (`session_id`), whose summaries and milestones say the same."""
    out = FoundCandidates()
    if not query.strip() or limit <= 0:
        return out
    outcome = memory_search(
        tenant=tenant,
        actor=actor,
        query=query,
        limit=limit,
        filters=MemoryFilters(
            exclude_sources=TURN_SOURCES, occurred_by=happened_by(as_of), known_by=said_by
        ),
        as_of=as_of,
    )
    by_text = _lines(outcome.hits, query, session_id)
    out.candidates.extend(
        _related_memory_candidates(
            tenant, actor, list(by_text.values()), as_of, session_id, said_by
        )
    )
    for index, (text, hit) in enumerate(by_text.items()):
        memory = hit.memory
        candidate = Candidate(
            f"memory:{memory.pk}",
            "memory",
            "memories",
            f"[{_label(memory, as_of)}] {text}",
            "memory",
            _when(memory),
            float(memory.importance),
            (index,),
        )
        semantic = outcome.related(hit, float(hit.parts.get("semantic", 0.0)))
        out.add(candidate, semantic=semantic, supported=hit.beyond_vector)
    return out


def _lines(hits: list[SearchHit], query: str, session_id: uuid.UUID | None) -> dict[str, Any]:
    """The hits by their line, best first: two memories that read the same (a preference
    stated in two turns) are one line; an episode of the session `session_id` is none."""
    by_text: dict[str, Any] = {}
    for hit in hits:
        if session_id is not None and _own_episode(hit.memory, session_id):
            continue
        by_text.setdefault(_text(hit.memory, query), hit)
    return by_text


def _own_episode(memory: Memory, session_id: uuid.UUID) -> bool:
    """Whether `memory` is a compaction episode of session `session_id` (tagged so by
    memory_app.services.extraction)."""
    return memory.session_id == session_id and "compaction" in (memory.tags or [])


def _text(memory: Memory, query: str) -> str:
    """The memory's line: its summary, else its content; of a content longer than a line,
    the passage that best answers `query` rather than its beginning."""
    if memory.summary:
        return line(memory.summary)
    return line(best_passage(" ".join(memory.content.split()), query, MAX_LINE_TOKENS))


def _when(memory: Memory) -> datetime:
    """When the memory happened (`occurred_at`), else when it was noted: its label and
    its recency, as a turn's are its own time."""
    return memory.occurred_at or memory.created_at


def _known_by(memory: Memory, moment: datetime) -> bool:
    """`MemoryFilters.known_by` for one memory: noted by `moment`, or dated by it."""
    return memory.created_at <= moment or (
        memory.occurred_at is not None and memory.occurred_at <= moment
    )


def _label(memory: Memory, as_of: datetime) -> str:
    return memory_label(_when(memory), memory.valid_to, as_of)


def _related_memory_candidates(
    tenant: Tenant,
    actor: Actor,
    hits: list[Any],
    as_of: datetime,
    session_id: uuid.UUID | None = None,
    said_by: datetime | None = None,
) -> list[Candidate]:
    """A found memory's direct relations come with it (seed 001: "supersedes",
    "derived_from", "related_to"), as kind `related_memory` with a little less signal
    than their anchor, so the breakdown shows why they are there. Asked in the past, a
    relation that had not happened or was not known by then (the successor of a move
    still to come) is left out, as the search leaves it out; so is an episode of the
    session `session_id`, related or not (its summaries and milestones say the same)."""
    anchors = {hit.memory.pk: hit.memory for hit in hits}
    cutoff = happened_by(as_of)
    out: list[Candidate] = []
    for index, (anchor, kind, memory) in enumerate(
        memory_neighbours(tenant=tenant, actor=actor, memory_ids=list(anchors))
    ):
        if cutoff is not None and memory.occurred_at is not None and memory.occurred_at > cutoff:
            continue
        if said_by is not None and not _known_by(memory, said_by):
            continue
        if session_id is not None and _own_episode(memory, session_id):
            continue
        relation = kind.replace("_", " ")
        text = line(f"({relation}) {memory.summary or memory.content}")
        out.append(
            Candidate(
                f"memory:{memory.pk}",
                "related_memory",
                "memories",
                f"[{_label(memory, as_of)}] {text}",
                "memory",
                _when(memory),
                RELATED_SIGNAL_SHARE
                * min(float(memory.importance), float(anchors[anchor].importance)),
                (RELATED_ORDER + index,),
            )
        )
    return out
